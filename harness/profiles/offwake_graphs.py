"""The off-wake graphs of a cell (the `offwake` probe): every blocking of the workload's
threads, blocked stack `--` waker stack, weighted by blocked ns, and its differential against
the baseline cell of the same scenario and params (inferno-diff-folded --normalize, baseline
first: red = more blocked time there than in the baseline, by share)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.profiles import folded

if TYPE_CHECKING:
    from harness.profiles.cells import CellProfiler, Drawing


def draw(profiler: CellProfiler, probe: str, at: Drawing) -> list[str]:
    """Fills the profile's offwake_* keys; returns the notes on what could not be drawn
    (`probe`: the name of the probe whose stacks these are)."""
    out, stacks = at.out, at.stacks
    if not stacks.offwake:
        return []
    blocked = folded.total(stacks.offwake)
    title = f"{profiler.suite}: {at.cell.strategy}, off-wake (blocked stack -- waker stack)"
    out.offwake_folded, out.offwake_svg = profiler._graph(
        f"{at.name}.offwake",
        stacks.offwake,
        title,
        f"{at.where}; {blocked / 1e6:.1f} ms off CPU, weighted by ns; above `--`: the waker, "
        "leaf first, its thread name on top",
        countname="ns",
        colors="wakeup",
    )
    out.offwake_ns = blocked
    notes = []
    summary = at.cell.probes.get(probe)
    lost = int((summary.totals or {}).get("lost_stacks") or 0) if summary else 0
    if lost:
        notes.append(
            f"off-wake graph: {lost} stacks lost (stack map collisions or errors; their frames "
            "read [stack lost...])"
        )
    if at.baseline is None:
        return [
            *notes,
            "no off-wake differential graph: no baseline cell with this scenario/params",
        ]
    base_cell, base = at.baseline
    if base_cell is at.cell:
        return notes
    if not base.offwake:
        return [
            *notes,
            "no off-wake differential graph: the baseline cell has no off-wake stacks",
        ]
    out.offwake_diff_svg = profiler._differential(
        base.offwake,
        stacks.offwake,
        f"{at.name}.offwake.diff.svg",
        f"{at.cell.strategy} vs {base_cell.strategy}, off-wake",
        f"{at.where}; red: more blocked time than in {base_cell.strategy}, blue: less "
        "(normalised by total blocked time)",
    )
    return notes
