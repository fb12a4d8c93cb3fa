"""`harness report RUN`: write a run's report.html and summary.md again."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.parsing import FORMATTER, Commands, help_text
from harness.report import write_all


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "report",
        help="write a run's report.html and summary.md again",
        formatter_class=FORMATTER,
        description=help_text("""
            Rewrite report.html (tables, flame graph links, probe highlights; works offline)
            and summary.md (a write-up to paste into a pull request) from a run's run.json.
            `harness run` and `harness bench` write both at the end of every run.
            """),
    )
    p.add_argument("run", type=Path, metavar="RUN", help="run directory")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    for path in write_all(args.run):
        print(path)
    return 0
