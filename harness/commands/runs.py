"""What `run` and `bench` share: running a plan into a new run directory under the signal
handlers, printing its table and reports, and the exit code of its status."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from harness.base.stop import stop_on_signals
from harness.base.writes import WriteFailed, write_failed
from harness.commands import consoles
from harness.commands.parsing import EXIT_INTERRUPTED
from harness.errors import BadInput
from harness.hostinfo import RunFacts, gather
from harness.paths import REPO_ROOT
from harness.run.plan import Plan
from harness.run.scratch import Scratch

if TYPE_CHECKING:
    from harness.run.recorder import RunRecord

DEFAULT_DEADLINE_SLACK_S = 120.0


def deadline_slack_s() -> float:
    text = os.environ.get("HARNESS_DEADLINE_SLACK_S")
    if not text:
        return DEFAULT_DEADLINE_SLACK_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise BadInput(f"HARNESS_DEADLINE_SLACK_S must be a number of seconds > 0, got {text!r}")
    return value


def run_plan(
    plan: Plan,
    out_dir: Path,
    command: Sequence[str],
    slack_s: float,
    table_console: Console,
    later_s: float = 0.0,
    wide: bool = False,
    facts: Future[RunFacts] | None = None,
) -> tuple[RunRecord, str]:
    """Runs the plan into a new run directory; `facts`, hostinfo.gather's for the plan's suite
    when it has been begun (hostinfo.gather_soon), else gathered here."""
    # The run pipeline (numpy, pydantic) is imported by the plan's run: a verb's checks of
    # its input (the suite, its describe, the plan) go without it.
    from harness import tables
    from harness.run.lifetime import open_confinement, workload_binaries
    from harness.run.recorder import RunRecord
    from harness.run.rejected import WorkloadRejected, end_rejected
    from harness.run.runner import execute

    with stop_on_signals() as stop:
        confinement = open_confinement(out_dir, workload_binaries(plan.suite.binary))
        try:
            git, host, source = (
                gather(REPO_ROOT, plan.suite.folder) if facts is None else facts.result()
            )
            record = RunRecord.create(
                out_dir, plan, git=git, host=host, command=command, suite_source=source
            )
            record.set_owner(confinement.owner)
            confinement.watch(record.run_dir)
            progress = consoles.stderr()
            files = Scratch.of(plan, record.run.run_id, lambda line: _say(progress, line))
            try:
                try:
                    status = execute(
                        plan, record, progress, stop, slack_s, later_s, confinement, files
                    )
                finally:
                    files.remove()
                # The reports' modules, once the repeats are done: not before the first.
                from harness.report import mechanism, write_all

                reports = write_all(record.run_dir)
            except WorkloadRejected as err:
                end_rejected(record, err)
                raise
            except WriteFailed as err:
                raise ended_failed(record, err) from err
            except OSError as err:
                raise ended_failed(record, write_failed(err)) from err
        except BaseException:
            confinement.close(finished=False)  # a run left `running` is marked abandoned
            raise
        confinement.close()
    tables.print_run(record.run, table_console, wide)
    # The reports' first findings.
    for line in mechanism.terminal_lines(record.run, record.run_dir):
        table_console.print(Text(line, style="bold"))
    for path in reports:
        print(f"{path.name}: {path}", file=sys.stderr if table_console.stderr else sys.stdout)
    return record, status


def ended_failed(record: RunRecord, err: WriteFailed) -> WriteFailed:
    """The write error in one line, after run.json says `failed` with it where it still can."""
    said = "says failed" if record.fail(str(err)) else "could not be updated"
    return WriteFailed(f"{err}; {record.path} {said}")


def status_exit(record: RunRecord, status: str) -> int:
    successes, failures = record.counts()
    if status == "interrupted":
        print(
            f"harness: interrupted; {record.path} keeps the {successes} completed repeats",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if failures:
        print(
            f"harness: {failures} of {successes + failures} repeats failed in suite "
            f"'{record.run.suite}' (status {status}); exit codes and stderr are in "
            f"{record.path} under cells[].failures",
            file=sys.stderr,
        )
        return 1
    return 0


def _say(console: Console, line: str) -> None:
    console.print(line, style="dim", markup=False, highlight=False)
