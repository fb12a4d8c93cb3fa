"""`harness history export`: every point, as CSV or JSON lines on stdout."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from typing import TypeVar

from harness.commands.history.reading import add_db_option
from harness.commands.parsing import Commands
from harness.history import queries
from harness.history.db import connect, database_errors

RANK = 5

T = TypeVar("T")

# What a spreadsheet takes for the start of a formula (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser("export", help="every point, as CSV or JSON lines on stdout")
    p.add_argument("--format", choices=("csv", "jsonl"), default="csv")
    add_db_option(p)
    p.set_defaults(handler=handle)


def spreadsheet_text(value: T) -> T | str:
    """A text cell a spreadsheet would run as a formula (a strategy named =HYPERLINK(...)),
    quoted with a leading ' as OWASP advises; numbers as they are, a negative one too."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def handle(args: argparse.Namespace) -> int:
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
