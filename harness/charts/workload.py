"""The charts a workload's describe may ask for in `plots` (docs/workload-contract.md), each
drawn per scenario from what the repeats report (all repeats of a cell pooled):
- `cdf`: one histogram field {le_ns, counts}, every strategy's distribution as overlaid
  CDFs;
- `per_connection`: fields with one number per connection; per field, every strategy's
  connections ranked by it.
- `series`: fields with one number per sampling period of the measured window (a time
  series); per field, every strategy's median over its repeats, sample by sample.
A drawer returns False, and writes nothing, for a scenario whose repeats have none of its
(first) field. CHARTS is the one list of them: describe.py checks a workload's `plots`
against it, run.py draws from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.charts.figures import pyplot, save

if TYPE_CHECKING:
    from harness.rundoc.model import Cell


@dataclass(frozen=True)
class Series:
    """A result field a plot draws, and what to call it on the axis."""

    name: str
    label: str


@dataclass(frozen=True)
class PlotSpec:
    """A plot the workload asks for, drawn per scenario from every repeat's result."""

    name: str  # file `<scenario>.<name>.png`, run.json plots[].kind
    chart: str  # one of CHARTS
    title: str
    series: tuple[Series, ...]


DPI = 110


def histogram_counts(cell: Cell, field: str) -> Counter[int]:
    """Upper bucket bound (ns) -> count, over the cell's repeats."""
    total: Counter[int] = Counter()
    for repeat in cell.repeats:
        hist = repeat.get(field) or {}
        for bound, count in zip(hist.get("le_ns") or [], hist.get("counts") or [], strict=False):
            total[int(bound)] += int(count)
    return total


def per_conn(cell: Cell, field: str) -> list[float]:
    values: list[float] = []
    for repeat in cell.repeats:
        values += [float(v) for v in repeat.get(field) or []]
    return sorted(values, reverse=True)


def series_medians(cell: Cell, field: str) -> list[float]:
    """Sample i -> the median over the cell's repeats that have a sample i."""
    runs = [[float(v) for v in repeat.get(field) or []] for repeat in cell.repeats]
    medians: list[float] = []
    for i in range(max((len(r) for r in runs), default=0)):
        column = sorted(r[i] for r in runs if i < len(r))
        mid = len(column) // 2
        medians.append(column[mid] if len(column) % 2 else (column[mid - 1] + column[mid]) / 2)
    return medians


def legend_label(cell: Cell) -> str:
    """The cell within its scenario: the strategy and the swept params (`pure shards=2`)."""
    parts = cell.id.split("/")
    if parts[0] == cell.scenario and len(parts) > 1 and parts[1] == cell.strategy:
        parts = parts[1:]
    return " ".join(parts)


def cdf(scenario: str, spec: PlotSpec, cells: Sequence[Cell], path: Path) -> bool:
    (series,) = spec.series
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = False
    for cell in cells:
        counts = histogram_counts(cell, series.name)
        total = sum(counts.values())
        if not total:
            continue
        bounds = sorted(counts)
        running, ys = 0, []
        for bound in bounds:
            running += counts[bound]
            ys.append(running / total)
        ax.step([max(b, 1) / 1e6 for b in bounds], ys, where="post", label=legend_label(cell))
        drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    ax.set_xlabel(f"{series.label} (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(f"{scenario}: {spec.title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    save(fig, path, DPI)
    return True


def _panels(
    scenario: str,
    spec: PlotSpec,
    cells: Sequence[Cell],
    path: Path,
    values_of: Callable[[Cell, str], list[float]],
    xlabel: str,
    ylabel: str,
    from_zero: bool = False,
) -> None:
    """A panel per field of `spec`, a line per cell through `values_of(cell, field)`."""
    from matplotlib.ticker import MaxNLocator  # matplotlib: only when drawing

    # squeeze=False: one field still gets a row of axes to iterate.
    fig, axes = pyplot().subplots(1, len(spec.series), figsize=(13, 4), squeeze=False)
    for ax, series in zip(axes[0], spec.series, strict=True):
        for cell in cells:
            values = values_of(cell, series.name)
            if values:
                ax.plot(range(1, len(values) + 1), values, marker=".", label=legend_label(cell))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel.format(series.label))
        ax.set_title(series.label)
        ax.grid(True, alpha=0.3)
        if from_zero:
            ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].legend()
    fig.suptitle(f"{scenario}: {spec.title}")
    save(fig, path, DPI)


def per_connection(scenario: str, spec: PlotSpec, cells: Sequence[Cell], path: Path) -> bool:
    if not any(per_conn(cell, spec.series[0].name) for cell in cells):
        return False
    xlabel = "rank (connections, shards...: one point each)"
    _panels(scenario, spec, cells, path, per_conn, xlabel, "{}")
    return True


def time_series(scenario: str, spec: PlotSpec, cells: Sequence[Cell], path: Path) -> bool:
    if not any(series_medians(cell, spec.series[0].name) for cell in cells):
        return False
    xlabel = "sample of the measured window"
    _panels(scenario, spec, cells, path, series_medians, xlabel, "{} (median of repeats)", True)
    return True


Draw = Callable[[str, PlotSpec, Sequence["Cell"], Path], bool]


@dataclass(frozen=True)
class Kind:
    draw: Draw
    one_series: bool  # exactly one field (cdf); the others take one or more, a panel each


# The charts a workload's `plots` may ask for, by the name its describe gives (`chart`).
CHARTS: dict[str, Kind] = {
    "cdf": Kind(cdf, one_series=True),
    "per_connection": Kind(per_connection, one_series=False),
    "series": Kind(time_series, one_series=False),
}
