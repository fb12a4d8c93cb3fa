"""`harness history`: import runs into the history database, list them, report regressions,
acknowledge expected changes, export every point."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Connection

from harness.commands.parsing import FORMATTER, Commands, help_text, positive_int
from harness.history import events, queries
from harness.history.db import connect, database_errors, writing
from harness.history.importer import import_runs, run_dirs_under
from harness.paths import results_root

T = TypeVar("T")

DB_HELP = (
    "database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB "
    "(default: $HARNESS_DB, else sqlite:///results/history.sqlite)"
)


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "history",
        help="the results history: import, list, regressions, ack, export",
        formatter_class=FORMATTER,
        description=help_text("""
            The history database holds every imported run's medians, intervals and repeats,
            per machine (a fingerprint of its CPU, memory and settings) and series (suite,
            strategy, scenario, parameters, metric). Importing finds change points per series
            and groups those of one run into an event; `regressions` lists the worsened
            series and exits 1 while one of them is not acknowledged.
            """),
        epilog=help_text("""
            examples:
              harness history import                     every run under results/runs
              harness history regressions --json         for cron and CI (exit 1: open ones)
              harness history ack 3 --reason "timer wheel traded latency for throughput"
              harness history export --format csv > points.csv
              HARNESS_DB=postgresql+psycopg://bench@db/harness harness history import
            """),
    )
    verbs = p.add_subparsers(dest="history_command", required=True, metavar="ACTION")

    imp = verbs.add_parser(
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
    imp.add_argument("run_dirs", type=Path, nargs="*", metavar="RUN_DIR")
    imp.set_defaults(handler=handle_import)

    listing = verbs.add_parser("list", help="the imported runs, oldest first")
    listing.set_defaults(handler=handle_list)

    regressions = verbs.add_parser(
        "regressions", help="worsened series; exit 1 while one is not acknowledged"
    )
    regressions.add_argument("--json", action="store_true", help="a JSON list on stdout")
    regressions.add_argument(
        "--all", action="store_true", help="acknowledged ones too (default: open ones only)"
    )
    regressions.set_defaults(handler=handle_regressions)

    ack = verbs.add_parser("ack", help="acknowledge an event: it never alarms again")
    ack.add_argument("event", type=positive_int, metavar="ID", help="the event's id")
    ack.add_argument("--reason", required=True, help="why the change is expected")
    ack.set_defaults(handler=handle_ack)

    export = verbs.add_parser("export", help="every point, as CSV or JSON lines on stdout")
    export.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    export.set_defaults(handler=handle_export)

    for verb in (imp, listing, regressions, ack, export):
        verb.add_argument("--db", metavar="URL", help=DB_HELP)


def handle_import(args: argparse.Namespace) -> int:
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


def _read(args: argparse.Namespace, query: Callable[[Connection], T]) -> T:
    """What query reads from the history at --db."""
    engine = connect(args.db, create=False)
    with database_errors(engine), engine.connect() as conn:
        return query(conn)


def handle_list(args: argparse.Namespace) -> int:
    rows = _read(args, queries.run_list)
    print(f"{'run':34} {'suite':12} {'machine':16} {'status':11} {'commit':10} points")
    for row in rows:
        commit = (row["git_commit"] or "")[:10]
        print(
            f"{row['run_id']:34} {row['suite']:12} {row['hostname'] or '?':16} "
            f"{row['status']:11} {commit:10} {row['points']}"
        )
    return 0


def handle_regressions(args: argparse.Namespace) -> int:
    found = _read(args, queries.changes)
    open_ones = [r for r in found if r["status"] == "open"]
    shown = found if args.all else open_ones
    if args.json:
        print(json.dumps(shown, indent=2))
    elif not shown:
        print("no open regressions")
    for r in [] if args.json else shown:
        params = ",".join(f"{k}={v}" for k, v in r["params"].items())
        print(
            f"event {r['event']} [{r['status']}] {r['suite']} {r['strategy']} {r['scenario']} "
            f"{params} {r['metric']}: {r['before']:.4g} -> {r['after']:.4g} "
            f"({r['change']:+.1%}, noise {r['noise']:.1%}) at {r['run_id']} on {r['machine']}"
        )
    return 1 if open_ones else 0


def handle_ack(args: argparse.Namespace) -> int:
    engine = connect(args.db, create=False)
    with database_errors(engine), writing(engine) as conn:
        run = events.acknowledge(conn, args.event, args.reason)
    print(f"event {args.event} (run {run}) acknowledged")
    return 0


# What a spreadsheet takes for the start of a formula (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(value: T) -> T | str:
    """A text cell a spreadsheet would run as a formula (a strategy named =HYPERLINK(...)),
    quoted with a leading ' as OWASP advises; numbers as they are, a negative one too."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def handle_export(args: argparse.Namespace) -> int:
    engine = connect(args.db, create=False)
    with database_errors(engine), engine.connect() as conn:
        rows = queries.export_rows(conn)
        if args.format == "jsonl":
            for row in rows:
                row["params"] = json.loads(row["params"])
                sys.stdout.write(json.dumps(row) + "\n")
        else:
            writer = csv.DictWriter(sys.stdout, fieldnames=queries.EXPORT_COLUMNS)
            writer.writeheader()
            writer.writerows(
                {key: spreadsheet_text(value) for key, value in row.items()} for row in rows
            )
    return 0
