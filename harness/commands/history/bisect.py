"""`harness history bisect EVENT`: the `harness bisect` of an event's regressed series, run,
and its result kept with the event (the dashboard shows it on the event's row and the
series' page)."""

from __future__ import annotations

import argparse
import shlex

from sqlalchemy import select

from harness.commands import bisect as bisect_command
from harness.commands.history.reading import add_db_option
from harness.commands.parsing import FORMATTER, Commands, Parser, help_text, positive_int
from harness.errors import BadInput, HarnessError
from harness.history import bisections
from harness.history.bisect_ranges import SeriesRange, event_ranges
from harness.history.db import connect, database_errors, writing
from harness.history.schema import events

RANK = 6

# bisect's options passed on when given (their defaults are bisect's own).
PASSED_ON = ("rounds", "max_rounds", "duration_s", "warmup_s", "explain_repeats")


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser(
        "bisect",
        help="bisect an event's regressed series and keep the result with the event",
        formatter_class=FORMATTER,
        description=help_text("""
            Run the `harness bisect` of an event's regressed series between the commit of
            the series' last run before the event and the commit of the event's run (those
            of the suite's checkout, on the same machine), and keep its result with the
            event: the first bad commit, its effect, the finding and the differential flame
            graph, shown by the dashboard. The command is printed before it runs; its
            progress goes to stderr. A bisection that fails or is interrupted keeps nothing;
            a new one of the same series replaces the one kept.
            """),
        epilog=help_text("""
            examples:
              harness history bisect 3                 the event's largest regression
              harness history bisect 3 --series 17 --explain-repeats 0
            """),
    )
    p.add_argument("event", type=positive_int, metavar="EVENT", help="the event's id")
    p.add_argument(
        "--series",
        type=positive_int,
        metavar="ID",
        help="the regressed series to bisect (default: the event's largest change; the id of "
        "the dashboard's series/ID.html, series_id in `harness history regressions --json`)",
    )
    bisect_command.add_bisection_options(p)
    p.set_defaults(**dict.fromkeys(PASSED_ON))
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    engine = connect(args.db, create=False)
    with database_errors(engine), engine.connect() as conn:
        known = conn.execute(select(events.c.id).where(events.c.id == args.event)).first()
        ranges = event_ranges(conn, args.event)
    if known is None:
        raise BadInput(f"no event {args.event} (harness history regressions lists them)")
    chosen = _chosen(args.event, args.series, ranges)
    if chosen.argv is None or chosen.good is None or chosen.bad is None:
        raise BadInput(
            f"event {args.event}, series {chosen.series_id}: no commit range to bisect: "
            f"{chosen.reason}"
        )
    argv = [*chosen.argv, *_passed_on(args)]
    command = shlex.join(argv)
    print(f"$ {command}", flush=True)
    doc = bisect_command.bisect(_bisect_args(argv))
    if doc.get("status") not in bisections.VERDICTS:
        raise HarnessError(f"the bisection ended {doc.get('status')}: nothing kept")
    with database_errors(engine), writing(engine) as conn:
        kept = bisections.store(
            conn, chosen.run_pk, chosen.series_id, (chosen.good, chosen.bad), command, doc
        )
    print(f"event {args.event}, series {chosen.series_id}: {kept.summary()}")
    if kept.finding:
        print(f"why: {kept.finding}")
    if kept.diff_flamegraph:
        print(f"differential flame graph: {kept.diff_flamegraph}")
    print(f"bisect folder: {kept.folder}")
    return 0


def _chosen(event: int, series_id: int | None, ranges: list[SeriesRange]) -> SeriesRange:
    """The named series' range, else the largest change's."""
    if not ranges:
        raise BadInput(
            f"event {event} has no regression to bisect (its changes are improvements, or "
            "changes of metrics without a direction)"
        )
    if series_id is None:
        return ranges[0]
    for found in ranges:
        if found.series_id == series_id:
            return found
    regressed = ", ".join(str(r.series_id) for r in ranges)
    raise BadInput(
        f"--series {series_id}: not a regressed series of event {event} (those are: {regressed})"
    )


def _passed_on(args: argparse.Namespace) -> list[str]:
    out = []
    for dest in PASSED_ON:
        value = getattr(args, dest)
        if value is not None:
            out += [f"--{dest.replace('_', '-')}", str(value)]
    return out


def _bisect_args(argv: list[str]) -> argparse.Namespace:
    """`harness bisect`'s parsed command line, as `harness` itself would parse it."""
    parser: argparse.ArgumentParser = Parser(prog="harness")
    bisect_command.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv[1:])
    args.command_line = argv
    return args
