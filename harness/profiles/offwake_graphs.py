"""The off-wake graphs of a cell (the `offwake` probe): every blocking of the workload's
threads, blocked stack `--` waker stack, weighted by blocked ns, and its differential against
the baseline cell of the same scenario and params (inferno-diff-folded --normalize, baseline
first: red = more blocked time there than in the baseline, by share)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.probes.kinds import offwake
from harness.profiles import folded, inferno
from harness.profiles.stacks import Stacks
from harness.rundoc.model import Cell, Profile

if TYPE_CHECKING:
    from harness.profiles.cells import CellProfiler


def draw(
    profiler: CellProfiler,
    out: Profile,
    cell: Cell,
    stacks: Stacks,
    baseline: tuple[Cell, Stacks] | None,
    name: str,
    where: str,
) -> list[str]:
    """Fills `out`'s offwake_* keys; returns the notes on what could not be drawn."""
    if not stacks.offwake:
        return []
    blocked = folded.total(stacks.offwake)
    title = f"{profiler.suite}: {cell.strategy}, off-wake (blocked stack -- waker stack)"
    out.offwake_folded, out.offwake_svg = profiler._graph(
        f"{name}.offwake",
        stacks.offwake,
        title,
        f"{where}; {blocked / 1e6:.1f} ms off CPU, weighted by ns; above `--`: the waker, "
        "leaf first, its thread name on top",
        countname="ns",
        colors="wakeup",
    )
    out.offwake_ns = blocked
    notes = []
    summary = cell.probes.get(offwake.NAME)
    lost = int((summary.totals or {}).get("lost_stacks") or 0) if summary else 0
    if lost:
        notes.append(
            f"off-wake graph: {lost} stacks lost (stack map collisions or errors; their frames "
            "read [stack lost...])"
        )
    if baseline is None:
        return [
            *notes,
            "no off-wake differential graph: no baseline cell with this scenario/params",
        ]
    base_cell, base = baseline
    if base_cell is cell:
        return notes
    if not base.offwake:
        return [*notes, "no off-wake differential graph: the baseline cell has no off-wake stacks"]
    diff = inferno.diff_folded(
        folded.render(base.offwake), folded.render(stacks.offwake), profiler.run_dir / "folded"
    )
    out.offwake_diff_svg = profiler._svg(
        f"{name}.offwake.diff.svg",
        diff,
        f"{profiler.suite}: {cell.strategy} vs {base_cell.strategy}, off-wake",
        f"{where}; red: more blocked time than in {base_cell.strategy}, blue: less "
        "(normalised by total blocked time)",
    )
    return notes
