"""Runs a plan's repeats in order and records each in run.json; a raised stop flag ends the run
after saving what completed."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from harness import cpuset
from harness.base.stop import StopFlag
from harness.describe import plain_number
from harness.probes import bpfstats, overhead, registry
from harness.probes.gather import gather
from harness.probes.metrics import op_count, per_op_metrics
from harness.probes.probe import ProbeResult
from harness.probes.record import EXPLAIN_FOLDER, cell_folder, with_repeat
from harness.probes.session import ProbeSession
from harness.profiles.cells import build_profiles
from harness.profiles.settings import ProfileSettings
from harness.run import perfmaps
from harness.run.confine import Confinement
from harness.run.plan import Plan
from harness.run.progress import Step, make_progress
from harness.run.recorder import RunRecord
from harness.run.rejected import rejection
from harness.run.repeat import Outcome, run_repeat
from harness.run.resultcheck import vet
from harness.run.scratch import Scratch
from harness.rundoc.model import Failure


def repeat_args(plan: Plan, cell_index: int) -> list[str]:
    return [
        *plan.cells[cell_index].run_args(),
        "--duration-s",
        plain_number(plan.duration_s),
        "--warmup-s",
        plain_number(plan.warmup_s),
    ]


def failure_record(repeat: int, outcome: Outcome) -> Failure:
    return Failure(
        repeat=repeat,
        exit_code=outcome.exit_code,
        error=outcome.error,
        stderr_tail=list(outcome.stderr_tail),
        elapsed_s=round(outcome.elapsed_s, 3),
    )


def execute(
    plan: Plan,
    record: RunRecord,
    console: Console,
    stop: StopFlag,
    deadline_slack_s: float,
    later_s: float = 0.0,
    confinement: Confinement | None = None,
    scratch: Scratch | None = None,
) -> str:
    """Run every repeat of the plan; returns the final status written to run.json. later_s:
    the planned seconds of the runs after this one (the ETA is the whole bench's). scratch:
    the run's scratch files, written before the repeats that need them (the caller removes
    them)."""
    variants = plan.variants()
    main = variants[-1]
    explain = next((v.key for v in variants if v.explain), None)
    runs = plan.runs()
    total = len(plan.cells) * plan.steps_per_cell()
    deadline_s = plan.warmup_s + plan.duration_s + deadline_slack_s
    planned_step_s = plan.warmup_s + plan.duration_s + plan.startup_s
    interrupted = False
    with make_progress(console, total, planned_step_s, later_s) as progress:
        for index, (cell_index, repeat, variant) in enumerate(runs, start=1):
            if stop.requested:
                interrupted = True
                break
            cell = plan.cells[cell_index]
            key = variant.key
            step = Step(
                index=index,
                total=total,
                cell=cell_index + 1,
                cells=len(plan.cells),
                repeat=repeat + 1,
                repeats=plan.repeats,
                label=f"{cell.label} [probes: {key}]" if len(variants) > 1 else cell.label,
            )
            progress.started(step)
            env = scratch.prepare(cell_index, stop) if scratch else {}
            if env is None:  # stopped while its scratch file was written
                interrupted = True
                break
            folder = cell_folder(record.run_dir, cell.id)
            overhead_only = key != main.key and not variant.explain
            if variant.explain:
                folder = folder / EXPLAIN_FOLDER  # its r<round>-*.json beside the others'
            elif overhead_only:
                folder = folder / f"overhead-{key}"  # deleted once its ops/s are in
            session = _session(plan, variant, folder, repeat + 1, stop)
            try:
                outcome = run_repeat(
                    plan.suite.binary,
                    plan.suite.folder,
                    repeat_args(plan, cell_index),
                    deadline_s,
                    stop,
                    hooks=cpuset.hooks(plan, session),
                    box=confinement.repeat() if confinement else None,
                    env=env,
                )
            finally:
                probes = session.close() if session else {}
                if overhead_only:
                    shutil.rmtree(folder, ignore_errors=True)
            perfmaps.remove(outcome.processes)  # the probes have read them by now
            if outcome.interrupted:
                interrupted = True
                break
            vet(outcome, plan.description.metrics)
            if (rejected := rejection(outcome, cell.label)) is not None:
                raise rejected
            if not outcome.ok:
                _discard(probes)
                record.add_failure(cell_index, failure_record(repeat + 1, outcome))
            elif overhead_only:
                assert outcome.result is not None
                share = bpfstats.repeat_share(r.bpf_stats for r in probes.values())
                record.add_variant_result(cell_index, key, {**outcome.result, **share})
            else:
                assert outcome.result is not None
                _add_result(
                    record,
                    cell_index,
                    Repeat(repeat + 1, outcome.result, probes, folder),
                    session.pids if session else [],
                    plan.profile,
                    key if variant.explain else None,
                    explain is not None,
                )
            if len(variants) > 1:
                if outcome.ok:
                    record.add_round(cell_index, key, repeat + 1)
                if plan.probe_overhead:
                    _update_overhead(record, cell_index, main.key)
                if explain is not None:
                    record.set_explain(cell_index, explain, main.key)
            record.write()
            progress.finished(step, outcome)
    _profiles(plan, record, console)
    from harness.charts.run import write_plots  # matplotlib: only when drawing

    record.set_plots(write_plots(record.run_dir, record.run.cells, plan.description.plots))
    return record.finish(interrupted)


def _session(
    plan: Plan, variant: overhead.Variant, folder: Path, round_: int, stop: StopFlag
) -> ProbeSession | None:
    """The repeat's probes, writing into `folder`; none for a variant without probes."""
    if not variant.specs:
        return None
    return ProbeSession(
        variant.specs, folder, round_, stop, profile=plan.profile, measurement=not variant.explain
    )


def _profiles(plan: Plan, record: RunRecord, console: Console) -> None:
    """Flame graphs and profile figures of every cell, also for an interrupted run."""
    if not plan.probes:
        return
    console.print("[dim]drawing flame graphs...[/]")
    gathered = [gather(record.run_dir, cell) for cell in record.run.cells]
    graphs = registry.flame_graphs()
    profiles, problems = build_profiles(record.run_dir, record.run, gathered, graphs, plan.profile)
    record.set_profiles(profiles)
    for problem in problems:
        console.print(f"[yellow]profiles:[/] {problem}")
    record.write()


@dataclass(frozen=True)
class Repeat:
    """One successful repeat of a cell with its probes' results."""

    round: int  # 1-based
    result: Mapping[str, Any]
    probes: Mapping[str, ProbeResult]
    folder: Path  # where its probes wrote


def _add_result(
    record: RunRecord,
    cell_index: int,
    repeat: Repeat,
    pids: list[int],
    profile: ProfileSettings,
    explain: str | None,
    explained: bool,
) -> None:
    """The repeat's metrics, with the per-op ones derived from its probes and its BPF CPU
    share, into the cell's repeats (explain: its explain repeats, under that key), and the
    probes' summary in the cell: an explain repeat's probes that need one (explain-only, or
    lean on the measurement repeats), a measurement repeat's others (explained: the run has
    explain repeats; without, every probe)."""
    probes = repeat.probes
    outputs = {name: r.data for name, r in probes.items() if r.ok and r.data is not None}
    derived = (
        per_op_metrics(repeat.result, outputs, pids[0], repeat.folder, profile.mutex_patterns)
        if pids and outputs
        else {}
    )
    share = bpfstats.repeat_share(r.bpf_stats for r in probes.values())
    result = {**repeat.result, **derived, **share}
    if explain is None:
        record.add_result(cell_index, result)
        kept = {
            name: r
            for name, r in probes.items()
            if not (explained and registry.kind_of(name).measurement_args)
        }
    else:
        record.add_variant_result(cell_index, explain, result)
        kept = {name: r for name, r in probes.items() if registry.kind_of(name).needs_explain}
    # The others' per-op metrics are in the repeat's result; their raw files go.
    _discard({name: r for name, r in probes.items() if name not in kept})
    if kept:
        cell_probes = record.cell(cell_index).probes
        ops = op_count(repeat.result)
        record.set_probes(
            cell_index, with_repeat(cell_probes, repeat.round, kept, record.run_dir, ops)
        )


def _discard(probes: Mapping[str, ProbeResult]) -> None:
    """A failed repeat keeps no probe output: run.json does not point at it."""
    for result in probes.values():
        if result.path is not None:
            result.path.unlink(missing_ok=True)


def _update_overhead(record: RunRecord, cell_index: int, main_key: str) -> None:
    cell = record.cell(cell_index)
    cell_ratios = overhead.cell_overhead({**(cell.probe_variants or {}), main_key: cell.repeats})
    cells = record.run.cells
    every = [cell_ratios if i == cell_index else c.probe_overhead for i, c in enumerate(cells)]
    run_ratios = overhead.run_overhead(r for r in every if r is not None)
    record.set_probe_overhead(cell_index, cell_ratios, run_ratios)
