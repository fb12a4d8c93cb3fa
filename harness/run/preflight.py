"""Everything a run is checked for before the lock is taken and anything is created: each
cell's input by the workload itself, the bpftrace scripts by a dry run, `--out`: that it
takes new files and has room for the plan's estimate of what the run writes, and the folders
of the scratch files (scratchroom.py)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.base.writes import RESERVE_BYTES
from harness.errors import BadInput
from harness.probes.btcheck import check_scripts
from harness.probes.registry import kind_of
from harness.run.bounds import check_plan
from harness.run.cellcheck import check_cells
from harness.run.plan import Plan
from harness.run.scratchroom import check_scratch, exists

KIB = 1024
MIB = 1024 * KIB
# What a run writes, measured on runs of this repo's suites and rounded up.
RUN_BYTES = 256 * KIB  # run.json at the start, report.html, summary.md
CELL_BYTES = 16 * KIB  # a cell's share of run.json
REPEAT_BYTES = 8 * KIB  # a repeat's share of run.json
PROBE_BYTES = 32 * KIB  # a probe's JSON output of a repeat
PROFILE_BYTES = 1 * MIB  # a cell's flame graphs, merged stacks and differential graphs
PLOT_BYTES = 128 * KIB  # a plot of a scenario


def preflight(plans: Sequence[Plan], out_dir: Path) -> None:
    """BadInput (exit 2) for the first thing that would stop the run later."""
    for plan in plans:
        check_plan(plan, out_dir)  # its size, and each cell's needs against this machine
        check_scripts(plan.probes)
        check_cells(plan)
    run_bytes = sum(estimate_bytes(plan) for plan in plans)
    check_out_dir(out_dir, run_bytes)
    check_scratch(plans, out_dir, run_bytes)  # and the run's, when on the same filesystem


def estimate_bytes(plan: Plan) -> int:
    """About the most the run's directory holds at once."""
    repeats = len(plan.cells) * plan.repeats
    total = RUN_BYTES + RESERVE_BYTES + len(plan.cells) * CELL_BYTES + repeats * REPEAT_BYTES
    total += len(plan.description.plots) * len(plan.scenarios) * PLOT_BYTES
    if not plan.probes:
        return total
    total += repeats * len(plan.probes) * PROBE_BYTES + len(plan.cells) * PROFILE_BYTES
    for spec in plan.probes:  # their other files: oncpu's folded stacks and perf.data
        total += kind_of(spec.name).files_bytes(plan.profile, plan.duration_s, repeats)
    return total


def check_out_dir(out_dir: Path, need_bytes: int) -> None:
    """BadInput unless a file can be made in `out_dir` (or the folder that will hold it) and
    its filesystem has `need_bytes` free."""
    probe = out_dir
    while not exists(probe) and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        raise BadInput(f"cannot create run directories in {out_dir}: {probe} is not a directory")
    try:  # access(2) says yes to root on a read-only or pseudo filesystem: try it
        fd, name = tempfile.mkstemp(prefix=".harness-out-check-", dir=probe)
    except OSError as err:
        raise BadInput(
            f"cannot create run directories in {out_dir}: cannot write in {probe}: "
            f"{err.strerror or err}"
        ) from err
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    stat = os.statvfs(probe)
    free = stat.f_bavail * stat.f_frsize
    if free < need_bytes:
        raise BadInput(
            f"not enough room for the run in {out_dir}: {_size(free)} free on its filesystem, "
            f"the run needs about {_size(need_bytes)} (free some space or choose another --out)"
        )


def _size(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n / KIB:.0f} KiB"
