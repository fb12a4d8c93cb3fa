"""A workload's exit 2 before `ready` in a repeat: bad input its `check` let through. It stops
the whole run at once (exit 2, the workload's line): every other repeat would fail alike."""

from __future__ import annotations

import shutil

from harness.errors import BadInput
from harness.run.recorder import RunRecord
from harness.run.repeat import Outcome

BEFORE_READY = "(before 'ready')"


class WorkloadRejected(BadInput):
    """The workload rejected its input in a repeat."""


def rejection(outcome: Outcome, cell_label: str) -> WorkloadRejected | None:
    if outcome.exit_code != 2 or not (outcome.reason or "").endswith(BEFORE_READY):
        return None
    last = next((line.strip() for line in reversed(outcome.stderr_tail) if line.strip()), "")
    said = last.removeprefix("error:").strip() or "no message on stderr"
    return WorkloadRejected(f"cell {cell_label}: the workload rejected its input: {said}")


def end_rejected(record: RunRecord, err: WorkloadRejected) -> None:
    """No run directory when nothing was measured yet; else run.json says failed, why."""
    if record.counts() == (0, 0):
        shutil.rmtree(record.run_dir, ignore_errors=True)
    else:
        record.fail(str(err))
