"""`harness history list`: the imported runs, oldest first."""

from __future__ import annotations

import argparse

from harness.commands.history.reading import add_db_option, read
from harness.commands.parsing import Commands
from harness.history import queries

RANK = 2


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser("list", help="the imported runs, oldest first")
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    rows = read(args, queries.run_list)
    print(f"{'run':34} {'suite':12} {'machine':16} {'status':11} {'commit':10} points")
    for row in rows:
        commit = (row["git_commit"] or "")[:10]
        print(
            f"{row['run_id']:34} {row['suite']:12} {row['hostname'] or '?':16} "
            f"{row['status']:11} {commit:10} {row['points']}"
        )
    return 0
