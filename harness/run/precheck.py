"""Checks of parameter combinations that describe's ranges cannot express.

A workload whose describe says `"check": true` takes `<bin> check --strategy S --scenario X
[--param k=v]...` (docs/workload-contract.md): it exits 0 if `run` would accept those
arguments and 2, with one line on stderr naming the bad input and the valid range, if not
(e.g. tokenbucket's `limit` below `threshold`). The harness asks it about every cell before
anything is created, so such bad input exits 2 without a run directory.
"""

from __future__ import annotations

import subprocess

from harness.describe import DESCRIBE_TIMEOUT_S, DescribeError
from harness.errors import BadInput
from harness.run.plan import Plan


def check_cells(plan: Plan) -> None:
    """BadInput for the first cell the workload rejects; nothing if it does not check."""
    if not plan.description.checks_input:
        return
    binary = plan.suite.binary
    for cell in plan.cells:
        command = [str(binary), "check", *cell.run_args()]
        try:
            done = subprocess.run(
                command,
                cwd=plan.suite.folder,
                capture_output=True,
                text=True,
                timeout=DESCRIBE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise DescribeError(
                f"`{binary} check` did not finish in {DESCRIBE_TIMEOUT_S} s"
            ) from err
        except OSError as err:
            raise DescribeError(f"`{binary} check` could not start: {err.strerror}") from err
        if done.returncode == 0:
            continue
        last = (done.stderr.strip().splitlines() or ["no message on stderr"])[-1]
        if done.returncode == 2:
            raise BadInput(f"cell {cell.id}: {last.removeprefix('error: ')}")
        raise DescribeError(f"`{binary} check` exited with code {done.returncode}: {last}")
