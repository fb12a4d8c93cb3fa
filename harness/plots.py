"""Plots of a run where a picture beats a table (matplotlib, PNG, under `<run>/plots/`).

Per scenario, from what the workload reports in its repeats (all repeats of a cell pooled):
- `wait_hist` {le_ns, counts}: the wait-time distribution of every strategy as overlaid
  CDFs (`<scenario>.wait.png`);
- `conn_requests`, `conn_applies`, `conn_resets` (one number per connection): per strategy,
  the connections ranked by each count (`<scenario>.per_conn.png`).
run.json `plots` lists them: {scenario, kind, path}.
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

from harness.profiles.cells import slug
from harness.results import write_atomic
from harness.rundoc.model import Cell, Plot, PlotKind

Draw = Callable[[str, Sequence[Cell], Path], bool]

PER_CONN = (
    ("conn_requests", "requests"),
    ("conn_applies", "setting applies"),
    ("conn_resets", "setting resets"),
)


def wait_counts(cell: Cell) -> Counter[int]:
    """Upper bucket bound (ns) -> count, over the cell's repeats."""
    total: Counter[int] = Counter()
    for repeat in cell.repeats:
        hist = repeat.get("wait_hist") or {}
        for bound, count in zip(hist.get("le_ns") or [], hist.get("counts") or [], strict=False):
            total[int(bound)] += int(count)
    return total


def per_conn(cell: Cell, key: str) -> list[float]:
    values: list[float] = []
    for repeat in cell.repeats:
        values += [float(v) for v in repeat.get(key) or []]
    return sorted(values, reverse=True)


def _save(fig: Any, path: Path) -> None:
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, png.getvalue())


def wait_cdf(scenario: str, cells: Sequence[Cell], path: Path) -> bool:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = False
    for cell in cells:
        counts = wait_counts(cell)
        total = sum(counts.values())
        if not total:
            continue
        bounds = sorted(counts)
        running, ys = 0, []
        for bound in bounds:
            running += counts[bound]
            ys.append(running / total)
        ax.step([max(b, 1) / 1e6 for b in bounds], ys, where="post", label=cell.strategy)
        drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    ax.set_xlabel("wait for a connection (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(f"{scenario}: wait-time distribution (CDF)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    _save(fig, path)
    return True


def per_conn_plot(scenario: str, cells: Sequence[Cell], path: Path) -> bool:
    if not any(per_conn(cell, "conn_requests") for cell in cells):
        return False
    fig, axes = plt.subplots(1, len(PER_CONN), figsize=(13, 4))
    for ax, (key, label) in zip(axes, PER_CONN, strict=True):
        for cell in cells:
            values = per_conn(cell, key)
            if values:
                ax.plot(range(1, len(values) + 1), values, marker=".", label=cell.strategy)
        ax.set_xlabel("connection (ranked)")
        ax.set_ylabel(f"{label} per connection")
        ax.set_title(label)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].legend()
    fig.suptitle(f"{scenario}: work per connection (all repeats)")
    _save(fig, path)
    return True


def write_plots(run_dir: Path, cells: Sequence[Cell]) -> list[Plot]:
    """Draw what the run's cells support; returns run.json's `plots`."""
    plots: list[Plot] = []
    for scenario in dict.fromkeys(cell.scenario for cell in cells):
        group = [cell for cell in cells if cell.scenario == scenario]
        draws: tuple[tuple[PlotKind, Draw], ...] = (("wait", wait_cdf), ("per_conn", per_conn_plot))
        for kind, draw in draws:
            path = run_dir / "plots" / f"{slug(scenario)}.{kind}.png"
            if draw(scenario, group, path):
                where = str(path.relative_to(run_dir))
                plots.append(Plot(scenario=scenario, kind=kind, path=where))
    return plots
