"""Plots of a run where a picture beats a table (matplotlib, PNG, under `<run>/plots/`).

The workload's describe asks for them in `plots` (docs/workload-contract.md); each is drawn
per scenario from what the repeats report (all repeats of a cell pooled):
- `cdf`: one histogram field {le_ns, counts}, every strategy's distribution as overlaid
  CDFs;
- `per_connection`: fields with one number per connection; per field, every strategy's
  connections ranked by it.
- `series`: fields with one number per sampling period of the measured window (a time
  series); per field, every strategy's median over its repeats, sample by sample.
A plot is skipped for a scenario whose repeats have none of its (first) field. run.json
`plots` lists them: {scenario, kind (the plot's name), path `plots/<scenario>.<name>.png`}.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from harness.base.writes import write_atomic
from harness.describe import PlotSpec
from harness.profiles.cells import slug
from harness.rundoc.model import Cell, Plot

Draw = Callable[[str, PlotSpec, Sequence[Cell], Path], bool]


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


def legend_label(cell: Cell) -> str:
    """The cell within its scenario: the strategy and the swept params (`pure shards=2`)."""
    parts = cell.id.split("/")
    if parts[0] == cell.scenario and len(parts) > 1 and parts[1] == cell.strategy:
        parts = parts[1:]
    return " ".join(parts)


def _save(fig: Any, path: Path) -> None:
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, png.getvalue())


def cdf(scenario: str, spec: PlotSpec, cells: Sequence[Cell], path: Path) -> bool:
    (series,) = spec.series
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
    _save(fig, path)
    return True


def per_connection(scenario: str, spec: PlotSpec, cells: Sequence[Cell], path: Path) -> bool:
    if not any(per_conn(cell, spec.series[0].name) for cell in cells):
        return False
    # squeeze=False: one field still gets a row of axes to iterate.
    fig, axes = plt.subplots(1, len(spec.series), figsize=(13, 4), squeeze=False)
    for ax, series in zip(axes[0], spec.series, strict=True):
        for cell in cells:
            values = per_conn(cell, series.name)
            if values:
                ax.plot(range(1, len(values) + 1), values, marker=".", label=legend_label(cell))
        ax.set_xlabel("rank (connections, shards...: one point each)")
        ax.set_ylabel(series.label)
        ax.set_title(series.label)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].legend()
    fig.suptitle(f"{scenario}: {spec.title}")
    _save(fig, path)
    return True


def series_medians(cell: Cell, field: str) -> list[float]:
    """Sample i -> the median over the cell's repeats that have a sample i."""
    runs = [[float(v) for v in repeat.get(field) or []] for repeat in cell.repeats]
    medians: list[float] = []
    for i in range(max((len(r) for r in runs), default=0)):
        column = sorted(r[i] for r in runs if i < len(r))
        mid = len(column) // 2
        medians.append(column[mid] if len(column) % 2 else (column[mid - 1] + column[mid]) / 2)
    return medians


def time_series(scenario: str, spec: PlotSpec, cells: Sequence[Cell], path: Path) -> bool:
    if not any(series_medians(cell, spec.series[0].name) for cell in cells):
        return False
    fig, axes = plt.subplots(1, len(spec.series), figsize=(13, 4), squeeze=False)
    for ax, series in zip(axes[0], spec.series, strict=True):
        for cell in cells:
            values = series_medians(cell, series.name)
            if values:
                ax.plot(range(1, len(values) + 1), values, marker=".", label=legend_label(cell))
        ax.set_xlabel("sample of the measured window")
        ax.set_ylabel(f"{series.label} (median of repeats)")
        ax.set_title(series.label)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].legend()
    fig.suptitle(f"{scenario}: {spec.title}")
    _save(fig, path)
    return True


# How each chart of describe.CHARTS is drawn.
DRAW: dict[str, Draw] = {"cdf": cdf, "per_connection": per_connection, "series": time_series}


def write_plots(run_dir: Path, cells: Sequence[Cell], specs: Sequence[PlotSpec]) -> list[Plot]:
    """Draw the workload's plots that the run's cells support; returns run.json's `plots`."""
    plots: list[Plot] = []
    for scenario in dict.fromkeys(cell.scenario for cell in cells):
        group = [cell for cell in cells if cell.scenario == scenario]
        for spec in specs:
            path = run_dir / "plots" / f"{slug(scenario)}.{spec.name}.png"
            if DRAW[spec.chart](scenario, spec, group, path):
                where = str(path.relative_to(run_dir))
                plots.append(Plot(scenario=scenario, kind=spec.name, path=where))
    return plots
