"""`harness compare RUN_A RUN_B`: the cells two runs have in common, B against A."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands import consoles
from harness.commands.parsing import FORMATTER, Commands, add_wide_option, help_text


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "compare",
        help="compare two runs cell by cell",
        formatter_class=FORMATTER,
        description=help_text("""
            Compare the cells two runs have in common: ratio of B to A per metric with its
            95% interval and significance. By default the table fits the terminal, a line a
            cell with the headline metrics' ratios first; --wide gives a row per cell and
            metric with A's and B's medians, p and the verdict. Cells with an on-CPU profile
            in both runs also get a differential flame graph (A first: red is more in B),
            written under RUN_B/compare/<A's run id>/.
            """),
        epilog=help_text("""
            examples:
              harness compare results/runs/20250101T000000Z-abc1234 \\
                              results/runs/20250102T000000Z-def5678
              harness compare old/run.json new/run.json --json
            """),
    )
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="run directory or run.json (before)")
    p.add_argument("run_b", type=Path, metavar="RUN_B", help="run directory or run.json (after)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON on stdout")
    add_wide_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from harness import compare  # numpy, pydantic: not for --help

    return compare.compare_command(args.run_a, args.run_b, consoles.stdout(), args.json, args.wide)
