"""`harness history import`: import run directories and find the changes they bring."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands.history.reading import add_db_option
from harness.commands.parsing import FORMATTER, Commands, help_text
from harness.history import events
from harness.history.db import connect, database_errors
from harness.history.importer import import_runs, run_dirs_under
from harness.paths import results_root

RANK = 1


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser(
        "import",
        help="import run directories (default: results/runs/*)",
        formatter_class=FORMATTER,
        description=help_text("""
            Import each run directory, each in its own transaction. A run.json that cannot
            be read is refused with one line naming it, and the other runs are imported;
            an older schema_version is read as the current one. Exit status: 0, also when
            a run found under results/runs was refused (named, so that one unreadable
            leftover does not fail every nightly); 2 when a RUN_DIR named on the command
            line was refused; 1 when the database failed.
            """),
    )
    p.add_argument("run_dirs", type=Path, nargs="*", metavar="RUN_DIR")
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    engine = connect(args.db, create=True)
    run_dirs = args.run_dirs or run_dirs_under(results_root() / "runs")
    with database_errors(engine):
        done, refused = import_runs(engine, run_dirs)
        for line in refused:
            print(f"harness: refused: {line}", file=sys.stderr)
        events.refresh_pending(engine)
    outcomes = ("imported", "updated", "unchanged", "skipped")
    counts = {o: sum(i.outcome == o for i in done) for o in outcomes}
    print(
        f"history: {counts['imported']} imported, {counts['updated']} updated, "
        f"{counts['unchanged']} unchanged, {counts['skipped']} still running, "
        f"{len(refused)} refused"
    )
    # Runs found under results/runs are only named when refused: the user did not ask for
    # them, and one unreadable file must not fail every `make bench` until it is removed.
    return 2 if refused and args.run_dirs else 0
