"""`harness history ack`: acknowledge an event, which then never alarms again."""

from __future__ import annotations

import argparse

from harness.commands.history.reading import add_db_option
from harness.commands.parsing import Commands, positive_int
from harness.history import events
from harness.history.db import connect, database_errors, writing

RANK = 4


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser("ack", help="acknowledge an event: it never alarms again")
    p.add_argument("event", type=positive_int, metavar="ID", help="the event's id")
    p.add_argument("--reason", required=True, help="why the change is expected")
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    engine = connect(args.db, create=False)
    with database_errors(engine), writing(engine) as conn:
        run = events.acknowledge(conn, args.event, args.reason)
    print(f"event {args.event} (run {run}) acknowledged")
    return 0
