"""Runs a plan's repeats in order, records each in run.json, and stops cleanly on a signal."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from rich.console import Console

from harness.describe import plain_number
from harness.plan import Plan
from harness.progress import STARTUP_ESTIMATE_S, Step, make_progress
from harness.results import RunRecord
from harness.workload import Outcome, StopFlag, run_repeat

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals() -> Iterator[StopFlag]:
    """SIGINT/SIGTERM only raise a flag: the loop then stops the workload and saves the run."""
    flag = StopFlag()

    def handler(signum: int, frame: FrameType | None) -> None:
        flag.signum = signum

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def repeat_args(plan: Plan, cell_index: int) -> list[str]:
    return [
        *plan.cells[cell_index].run_args(),
        "--duration-s",
        plain_number(plan.duration_s),
        "--warmup-s",
        plain_number(plan.warmup_s),
    ]


def failure_record(repeat: int, outcome: Outcome) -> dict[str, object]:
    return {
        "repeat": repeat,
        "exit_code": outcome.exit_code,
        "error": outcome.error,
        "stderr_tail": outcome.stderr_tail,
        "elapsed_s": round(outcome.elapsed_s, 3),
    }


def execute(
    plan: Plan, record: RunRecord, console: Console, stop: StopFlag, deadline_slack_s: float
) -> str:
    """Run every repeat of the plan; returns the final status written to run.json."""
    schedule = plan.schedule()
    deadline_s = plan.warmup_s + plan.duration_s + deadline_slack_s
    planned_step_s = plan.warmup_s + plan.duration_s + STARTUP_ESTIMATE_S
    interrupted = False
    with make_progress(console, len(schedule), planned_step_s) as progress:
        for index, (cell_index, repeat) in enumerate(schedule, start=1):
            if stop.requested:
                interrupted = True
                break
            cell = plan.cells[cell_index]
            step = Step(
                index=index,
                total=len(schedule),
                cell=cell_index + 1,
                cells=len(plan.cells),
                repeat=repeat + 1,
                repeats=plan.repeats,
                label=cell.label,
            )
            progress.started(step)
            outcome = run_repeat(
                plan.suite.binary,
                plan.suite.folder,
                repeat_args(plan, cell_index),
                deadline_s,
                stop,
            )
            if outcome.interrupted:
                interrupted = True
                break
            if outcome.ok:
                assert outcome.result is not None
                record.add_result(cell_index, outcome.result)
            else:
                record.add_failure(cell_index, failure_record(repeat + 1, outcome))
            record.write()
            progress.finished(step, outcome)
    return record.finish(interrupted)
