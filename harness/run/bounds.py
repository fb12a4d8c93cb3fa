"""Bounds a plan must keep before anything runs: how many repeats and cells, and what each
cell needs (the workload's `needs`) against this machine's memory and disk. A plan over a
bound is refused with exit 2, naming the figure and the limit."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from harness import needs
from harness.errors import BadInput
from harness.run.memlimit import ENV, human, repeat_limit

if TYPE_CHECKING:  # the plan checks its cells with check_cells
    from harness.run.plan import Plan

MAX_REPEATS = 1000
MAX_CELLS = 10_000
MAX_STEPS = 100_000  # repeats of every cell, all cells together


def check_cells(count: int) -> None:
    """Before the cells are laid out: a sweep may not make more than MAX_CELLS."""
    if count > MAX_CELLS:
        raise BadInput(
            f"the plan has {count:,} cells (strategies x scenarios x swept values), more than "
            f"the {MAX_CELLS:,} a run may have: sweep fewer values"
        )


def check_plan(plan: Plan, out_dir: Path) -> None:
    """The plan's size, and every cell's needs against the memory a repeat may use and the
    free disk of out_dir."""
    steps = len(plan.cells) * plan.repeats
    if steps > MAX_STEPS:
        raise BadInput(
            f"the plan runs {steps:,} repeats ({len(plan.cells):,} cells x {plan.repeats}), "
            f"more than the {MAX_STEPS:,} a run may have: fewer cells or repeats"
        )
    if not plan.description.needs:
        return
    limits = {"memory_bytes": repeat_limit(), "disk_bytes": _free_disk(out_dir)}
    sources = {
        "memory_bytes": f"the memory a repeat may use here (MemAvailable less a reserve, or {ENV})",
        "disk_bytes": f"the free disk space of {out_dir}",
    }
    specs = plan.description.params
    for cell in plan.cells:
        variables = {
            **{name: spec.default for name, spec in specs.items()},
            **cell.params,
            "duration_s": plan.duration_s,
            "warmup_s": plan.warmup_s,
        }
        try:
            figures = needs.evaluate(plan.description.needs, variables)
        except ValueError as err:
            raise BadInput(
                f"suite '{plan.suite.name}': cannot compute what cell '{cell.id}' needs: {err}"
            ) from None
        for name in needs.CHECKED:
            limit, need = limits[name], figures.get(name)
            if need is not None and limit is not None and need > limit:
                others = [f"{k} {_plain(v)}" for k, v in figures.items() if k not in needs.CHECKED]
                why = f" ({', '.join(others)})" if others else ""
                raise BadInput(
                    f"cell '{cell.id}' needs {human(need)} of {name.split('_')[0]}{why}, more "
                    f"than the {human(limit)} of {sources[name]}"
                )


def _free_disk(out_dir: Path) -> int | None:
    probe = out_dir
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        stat = os.statvfs(probe)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def _plain(value: float) -> str:
    return f"{value:.3g}" if not value.is_integer() or abs(value) >= 1e6 else str(int(value))
