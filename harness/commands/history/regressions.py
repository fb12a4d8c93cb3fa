"""`harness history regressions`: the worsened series; exit 1 while one is not acknowledged."""

from __future__ import annotations

import argparse
import json

from harness.commands.history.reading import add_db_option, read
from harness.commands.parsing import Commands
from harness.history import queries

RANK = 3


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser(
        "regressions", help="worsened series; exit 1 while one is not acknowledged"
    )
    p.add_argument("--json", action="store_true", help="a JSON list on stdout")
    p.add_argument(
        "--all", action="store_true", help="acknowledged ones too (default: open ones only)"
    )
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    found = read(args, queries.changes)
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
