"""`harness report RUN`: write a run's report.html and summary.md again."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.base.writes import write_failed
from harness.commands.parsing import FORMATTER, Commands, help_text


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
    p.add_argument("run", type=Path, metavar="RUN", help="run directory or its run.json")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Exit 2 for what is not a run (as `compare`), 1 when a report cannot be written."""
    from harness.report import write_all  # pydantic: not for --help
    from harness.rundoc.jsonfile import load_run

    run: Path = args.run
    folder = run if run.is_dir() else run.parent
    load_run(run)  # RunLoadError, exit 2: a foreign file, another schema_version...
    try:
        paths = write_all(folder)
    except OSError as err:
        raise write_failed(err) from err
    for path in paths:
        print(path)
    return 0
