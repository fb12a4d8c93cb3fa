"""Which strategy each row of a scenario's table is compared with, as the tables and reports
show it: the run's baseline, or the strategy's twin (describe's `compare_with`), whose ratio
is marked TWIN_MARK and named under the table; and the note on a twin the run did not have.
The texts are plain: each caller escapes them for its medium."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.rundoc.model import Cell, RunDoc

TWIN_MARK = "†"


@dataclass(frozen=True)
class VsColumn:
    """The ratio column of one scenario's table."""

    baseline: str
    """The run's baseline."""
    has_baseline: bool
    """The scenario has cells of the baseline (the column is headed `vs <baseline>`)."""
    against: Mapping[str, str | None]
    """Strategy -> the strategy its cells are compared with (None: with nothing)."""

    @property
    def heading(self) -> str:
        return f"vs {self.baseline}" if self.has_baseline else "vs"

    def uncompared(self, strategy: str) -> bool:
        """A row of the baseline compared with nothing: it says `baseline`."""
        return self.against.get(strategy) is None

    def twin(self, strategy: str) -> str | None:
        """The twin the strategy is compared with, or None when it is the baseline (or
        nothing)."""
        against = self.against.get(strategy)
        return against if against is not None and against != self.baseline else None

    def footnote(self) -> str | None:
        """`† against its twin, not none: driver vs driver-bare`, for the rows marked."""
        pairs = [f"{s} vs {t}" for s in self.against if (t := self.twin(s)) is not None]
        if not pairs:
            return None
        return f"{TWIN_MARK} against its twin, not {self.baseline}: {', '.join(pairs)}"


def vs_column(run: RunDoc, group: Sequence[Cell]) -> VsColumn | None:
    """The scenario's ratio column; None when no cell of it has the cell it is compared with
    in the scenario."""
    present = {cell.strategy for cell in group}
    against = {cell.strategy: run.baseline_of(cell) for cell in group}
    if not any(other in present for other in against.values()):
        return None
    baseline = run.config.baseline
    return VsColumn(baseline, baseline in present, against)


def twin_clause(run: RunDoc) -> str:
    """` (to the strategy's twin where marked †)` for a legend's ratio, when some cell of the
    run is compared with its twin; else nothing."""
    baseline = run.config.baseline
    if all(run.baseline_of(cell) in (None, baseline) for cell in run.cells):
        return ""
    return f" (to the strategy's twin where marked {TWIN_MARK})"


def missing_twins(run: RunDoc) -> list[str]:
    """A line per strategy of the run whose twin it did not run, compared with the baseline
    instead: `driver is compared with none, not compared with its twin driver-bare: the run
    has no driver-bare cells (...)`."""
    strategies = set(run.config.strategies)
    twins: Mapping[str, str] = run.config.compare_with or {}
    baseline = run.config.baseline
    return [
        f"{strategy} is {'the baseline' if strategy == baseline else f'compared with {baseline}'}"
        f", not compared with its twin {twin}: the run has no {twin} cells (--strategies "
        f"{strategy},{twin},...)"
        for strategy, twin in twins.items()
        if strategy in strategies and twin not in strategies
    ]
