"""`harness build`: run each suite's build command in its folder."""

from __future__ import annotations

import argparse
import subprocess
import sys

from harness.catalog import choose, unmet_requirements
from harness.commands.parsing import FORMATTER, Commands, help_text, names
from harness.errors import HarnessError
from harness.paths import suites_path, workloads_root


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "build",
        help="build the suites' binaries",
        formatter_class=FORMATTER,
        description=help_text("""
            Run each suite's `build` command (from its suite.toml) in the suite's folder,
            streaming its output. Stops at the first suite whose build fails.
            """),
        epilog=help_text("""
            examples:
              harness build
              harness build --suites timers
              harness build --suites ~/suites/sumbench
            """),
    )
    p.add_argument(
        "--suites",
        type=names,
        metavar="A,B",
        help="comma-separated suites, by name or folder path (default: all)",
    )
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    for suite in choose(args.suites, workloads_root(), suites_path()):
        if suite.build is None:
            print(f"harness: suite '{suite.name}' has no build command", file=sys.stderr)
            continue
        if (unmet := unmet_requirements(suite)) is not None:
            print(f"harness: skipping suite '{suite.name}': {unmet}", file=sys.stderr)
            continue
        print(f"harness: building suite '{suite.name}': {suite.build}", file=sys.stderr, flush=True)
        done = subprocess.run(suite.build, shell=True, cwd=suite.folder, check=False)
        if done.returncode != 0:
            raise HarnessError(
                f"build of suite '{suite.name}' failed (exit code {done.returncode}): {suite.build}"
            )
    return 0
