"""`harness`: list, build, run and compare benchmark suites. Each verb is a module of
harness/commands/ with its parser and its handler; this one assembles them. A command line
that names its verb imports that verb's module alone: the others pull in scipy, matplotlib
and SQLAlchemy, seconds of start-up for every `harness` call."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from harness.commands.parsing import EXIT_CODES, EXIT_INTERRUPTED, FORMATTER, Parser, help_text
from harness.errors import HarnessError

# In the order `harness --help` lists them.
VERBS = (
    *("list", "build", "run", "bench", "probe", "compare", "report", "history", "dashboard"),
    *("bisect", "doctor"),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every verb's, or only the verb `only`'s."""
    parser = Parser(
        prog="harness",
        formatter_class=FORMATTER,
        description=help_text("""
            Benchmark harness: runs the strategies of each suite (a folder with a suite.toml:
            those in workloads/, those in the folders of $HARNESS_SUITES_PATH, or any folder
            given by its path) several times, and reports medians with 95% intervals and
            ratios to a baseline.
            """),
        epilog=help_text("""
            examples:
              harness list                          suites, strategies, scenarios, parameters
              harness run timers --strategies none,tokio-timeout --param concurrency=64
              harness run ~/suites/sumbench         a suite outside the repo, by its folder
              harness bench --quick                 what `make bench QUICK=1` runs
              harness compare results/runs/A results/runs/B
            """)
        + "\n"
        + EXIT_CODES,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS if only is None else (only,):
        importlib.import_module(f"harness.commands.{verb}").add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    named = args_list[0] if args_list and args_list[0] in VERBS else None
    args = build_parser(named).parse_args(args_list)
    args.command_line = ["harness", *args_list]
    try:
        code: int = args.handler(args)
        return code
    except HarnessError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
