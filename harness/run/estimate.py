"""What a bench will take before it starts: per suite its cells, repeats and estimated
seconds (repeats x (warm-up + duration + start-up) per cell and probe set, the explain
repeats counted).

The start-up of a repeat (spawning, probes, its share of the report) is learned from the
newest complete run of the suite in the results on a machine with as many CPUs: its length
over its repeats, less their warm-up and duration. Until one exists it is the plan's
STARTUP_ESTIMATE_S, which is short for suites with probes or a JVM.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from harness.run.memlimit import human
from harness.run.plan import Plan
from harness.run.scratch import plan_files
from harness.rundoc.jsonfile import RunLoadError, load_run
from harness.rundoc.model import RunDoc

# How far back the results are searched for a suite's last run: a night's runs and then some.
LOOKBACK_RUNS = 40


def steps(plan: Plan) -> int:
    return len(plan.cells) * plan.steps_per_cell()


def planned_s(plan: Plan) -> float:
    return steps(plan) * (plan.warmup_s + plan.duration_s + plan.startup_s)


def learn_startup(plans: Sequence[Plan], runs_dir: Path, cpus: int) -> list[Plan]:
    """The plans with the start-up each suite's newest complete run here took per repeat."""
    wanted = {plan.suite.name for plan in plans}
    learned: dict[str, tuple[float, str]] = {}
    folders = sorted(runs_dir.glob("*/run.json"), reverse=True)
    for file in folders[:LOOKBACK_RUNS]:
        if wanted <= learned.keys():
            break
        try:
            run = load_run(file)
        except RunLoadError as error:
            # A run directory the bench cannot read does not stop it; the user hears of it.
            print(f"harness: start-up estimate: skipped {error}", file=sys.stderr)
            continue
        if run.suite in wanted and run.suite not in learned:
            startup = startup_of(run, cpus)
            if startup is not None:
                learned[run.suite] = (startup, run.run_id)
    return [
        replace(
            plan, startup_s=learned[plan.suite.name][0], startup_from=learned[plan.suite.name][1]
        )
        if plan.suite.name in learned
        else plan
        for plan in plans
    ]


def startup_of(run: RunDoc, cpus: int) -> float | None:
    """The start-up of a repeat of `run` (its length over its repeats, less their warm-up and
    window), when it is complete and of a machine with `cpus` logical CPUs."""
    if run.status != "complete" or run.finished_at is None or run.host.logical_cpus != cpus:
        return None
    config = run.config
    # Every repeat it ran, of every probe set: what its plan had (the run is complete).
    count = sum(
        len(c.repeats) + len(c.failures) + sum(len(v) for v in (c.probe_variants or {}).values())
        for c in run.cells
    )
    if count == 0:
        return None
    took = (_when(run.finished_at) - _when(run.started_at)).total_seconds()
    return max(0.0, took / count - config.warmup_s - config.duration_s)


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def plan_lines(plans: Sequence[Plan], cpus: int) -> list[str]:
    """The bench plan as printed before it starts: a table of the suites (one line each, so
    that it fits a 100-column terminal), the scratch files, the total last."""
    total = sum(planned_s(plan) for plan in plans)
    rows = [
        (
            plan.suite.name,
            str(len(plan.cells)),
            f"{plan.repeats}" + (f" + {plan.explain_repeats}" if plan.explain_repeats else ""),
            f"{plan.warmup_s:g} s + {plan.duration_s:g} s",
            clock(planned_s(plan)),
            _startup(plan),
        )
        for plan in plans
    ]
    header = ("suite", "cells", "repeats", "warm-up + window", "about", "start-up a repeat")
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = [f"bench plan ({cpus} logical CPUs):"]
    for name, cells, repeats, window, about, startup in table:
        lines.append(
            f"  {name:<{widths[0]}}  {cells:>{widths[1]}}  {repeats:>{widths[2]}}  "
            f"{window:<{widths[3]}}  {about:>{widths[4]}}  {startup}"
        )
    if any(plan.explain_repeats for plan in plans):
        lines.append("  repeats n + m: m explain repeats, whose probes stay out of the figures")
    lines += _scratch_lines(plans)
    lines.append(f"  estimated duration: {clock(total)}")
    return lines


def _startup(plan: Plan) -> str:
    if plan.startup_from is None:
        return f"{plan.startup_s:g} s: no earlier run of it here to learn from"
    return f"{plan.startup_s:.1f} s (run {plan.startup_from})"


def _scratch_lines(plans: Sequence[Plan]) -> list[str]:
    """Per folder, the scratch files each suite writes there."""
    by_folder: dict[str, dict[str, int]] = {}
    for plan in plans:
        for file in plan_files(plan):
            sizes = by_folder.setdefault(str(file.dir), {})
            sizes[plan.suite.name] = sizes.get(plan.suite.name, 0) + file.size_bytes
    return [
        f"  scratch files in {folder}: "
        + ", ".join(f"{name} {human(size)}" for name, size in sizes.items())
        for folder, sizes in by_folder.items()
    ]
