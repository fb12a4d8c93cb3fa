"""Progress of a run on stderr: a live bar on a terminal, one line per repeat otherwise."""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from harness.format.names import printable
from harness.format.numbers import thousands
from harness.run.repeat import Outcome


@dataclass(frozen=True)
class Step:
    """One repeat of one cell, as placed in the run's schedule."""

    index: int  # 1-based position in the schedule
    total: int
    cell: int  # 1-based
    cells: int
    repeat: int  # 1-based
    repeats: int
    label: str  # strategy and explicit params, as the workload names them

    def where(self) -> str:
        where = f"cell {self.cell}/{self.cells} repeat {self.repeat}/{self.repeats}"
        return f"{where} {printable(self.label)}"


class ProgressView(Protocol):
    def __enter__(self) -> ProgressView: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def started(self, step: Step) -> None: ...

    def finished(self, step: Step, outcome: Outcome) -> None: ...


def outcome_text(outcome: Outcome) -> str:
    if outcome.ok:
        assert outcome.result is not None
        ops = outcome.result.get("ops_per_sec")
        if isinstance(ops, int | float):
            return f"{thousands(ops)} ops/s"
        return "ok"
    return f"FAILED: {printable(outcome.error)}"  # the workload's words, maybe its stderr


class _Eta:
    """Remaining time: steps left x the mean step so far (planned length before the first),
    plus `later_s`, the planned length of the runs still to come after this one (bench)."""

    def __init__(self, total: int, planned_step_s: float, later_s: float = 0.0) -> None:
        self.total = total
        self.planned_step_s = planned_step_s
        self.later_s = later_s
        self.started = time.monotonic()
        self.done = 0

    def step_done(self) -> None:
        self.done += 1

    def remaining_s(self) -> float:
        elapsed = time.monotonic() - self.started
        per_step = elapsed / self.done if self.done else self.planned_step_s
        return max(0.0, per_step * self.total - elapsed) + self.later_s


class LineProgress:
    """For logs and pipes: one concise line per finished repeat."""

    def __init__(
        self, stream: IO[str], total: int, planned_step_s: float, later_s: float = 0.0
    ) -> None:
        self.stream = stream
        self.eta = _Eta(total, planned_step_s, later_s)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def started(self, step: Step) -> None:
        return None

    def finished(self, step: Step, outcome: Outcome) -> None:
        self.eta.step_done()
        eta = _clock(self.eta.remaining_s())
        line = (
            f"[{step.index}/{step.total}] {step.where()}: {outcome_text(outcome)} "
            f"({outcome.elapsed_s:.1f} s, ETA {eta})"
        )
        print(line, file=self.stream, flush=True)


class _EtaColumn(ProgressColumn):
    def __init__(self, eta: _Eta) -> None:
        super().__init__()
        self.eta = eta

    def render(self, task: Task) -> Text:
        return Text(f"ETA {_clock(self.eta.remaining_s())}", style="progress.remaining")


class RichProgress:
    """For a terminal: bar, cell i/N, repeat r/R, strategy and params, elapsed, ETA, last ops/s."""

    def __init__(
        self, console: Console, total: int, planned_step_s: float, later_s: float = 0.0
    ) -> None:
        self.eta = _Eta(total, planned_step_s, later_s)
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),  # names are not markup
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            _EtaColumn(self.eta),
            TextColumn("{task.fields[last]}"),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("starting", total=total, last="")

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def started(self, step: Step) -> None:
        self.progress.update(self.task, description=step.where())

    def finished(self, step: Step, outcome: Outcome) -> None:
        self.eta.step_done()
        # A failure's reason is printed above the bar in full; the bar only flags it.
        last = outcome_text(outcome) if outcome.ok else "FAILED"
        fields: dict[str, Any] = {"last": f"last: {last}"}
        self.progress.update(self.task, advance=1, **fields)
        if not outcome.ok:
            line = f"{step.where()}: {outcome_text(outcome)}"
            self.progress.console.print(Text(line, style="red"))


def make_progress(
    console: Console, total: int, planned_step_s: float, later_s: float = 0.0
) -> ProgressView:
    """later_s: the planned seconds of the runs after this one, so that the ETA is the whole
    bench's."""
    if console.is_terminal:
        return RichProgress(console, total, planned_step_s, later_s)
    return LineProgress(console.file, total, planned_step_s, later_s)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
