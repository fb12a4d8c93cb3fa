"""`<bin> check` of every cell of a plan (docs/workload-contract.md): bad input that only the
workload can see stops the run before the lock is taken or a run directory is created.
Only a workload of contract version 2 has `check`; a version-1 workload's own bad input
stops the run at its first repeat (exit 2 before `ready`)."""

from __future__ import annotations

from harness.describe import DescribeError, run_binary
from harness.errors import BadInput
from harness.run.plan import Plan
from harness.run.runner import repeat_args


def check_cells(plan: Plan) -> None:
    """BadInput with the workload's own line for the first cell it rejects (exit 2);
    DescribeError when `check` itself breaks the contract."""
    if not plan.description.has_check:
        return
    command = f"`{plan.suite.binary.name} check`"
    for index, cell in enumerate(plan.cells):
        done = run_binary(plan.suite, ["check", *repeat_args(plan, index)], command)
        last = (done.stderr.strip().splitlines() or ["no message on stderr"])[-1].strip()
        if done.returncode == 2:
            line = last.removeprefix("error:").strip()
            raise BadInput(f"suite '{plan.suite.name}', cell {cell.label}: {line}")
        if done.returncode != 0:
            raise DescribeError(
                f"{command} of cell {cell.label} exited with code {done.returncode}: {last}"
            )
