"""`harness`: list, build, run and compare benchmark suites. Each verb is a module of
harness/commands/ with its parser and its handler; this one assembles them. A command line
imports the module of its verb alone, and `harness --help` none: the verbs pull in scipy,
matplotlib and SQLAlchemy, a second of start-up for every `harness` call."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from harness.commands.parsing import (
    EXIT_CODES,
    EXIT_INTERRUPTED,
    FORMATTER,
    Commands,
    Parser,
    help_text,
)
from harness.errors import HarnessError

# Each verb's line in `harness --help`, in its order: the top-level help is built from these
# without importing a verb's module (each module's parser gives the same help; test_cli.py).
VERBS = {
    "list": "list suites with their strategies, scenarios and parameters",
    "build": "build the suites' binaries",
    "run": "run one suite's strategies and write a run directory",
    "bench": "run every suite's [bench] matrix (what `make bench` calls)",
    "probe": "probe running processes for a few seconds",
    "compare": "compare two runs cell by cell",
    "report": "write a run's report.html and summary.md again",
    "history": "the history: import, confirm, regressions, bisect, power, list, ack, export",
    "dashboard": "write the history's static dashboard (default: results/dashboard/)",
    "bisect": "find the commit that made one cell of a suite worse",
    "doctor": "check this machine for benchmarking",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every verb's, or only the verb `only`'s."""
    parser, commands = _top_level()
    for verb in VERBS if only is None else (only,):
        importlib.import_module(f"harness.commands.{verb}").add_parser(commands)
    return parser


def summary_parser() -> argparse.ArgumentParser:
    """The top-level parser with each verb's one line and no options: its help is
    `harness --help`, and it tells which verb a command line names."""
    parser, commands = _top_level()
    for verb, summary in VERBS.items():
        commands.add_parser(verb, help=summary, add_help=False)
    return parser


def _top_level() -> tuple[argparse.ArgumentParser, Commands]:
    parser: argparse.ArgumentParser = Parser(
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
    return parser, commands


def _verb(args: list[str]) -> str:
    """The verb `args` name; the summary parser prints `harness --help` or the usage error
    of a command line without one (and exits), as the whole parser would."""
    if args and args[0] in VERBS:
        return args[0]
    # Arguments it does not know (`harness --json list`) are left for the verb's parser.
    verb: str = summary_parser().parse_known_args(args)[0].command
    return verb


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_verb(args_list)).parse_args(args_list)
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
