"""`harness list`: the suites, with what each one's `describe` offers."""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.catalog import NOT_BUILT, find_suites, unmet_requirements
from harness.commands import consoles
from harness.commands.parsing import FORMATTER, Commands, help_text
from harness.describe import DescribeError, Description
from harness.describe_cache import describe_cached
from harness.listing import print_suites_kept, suite_entry
from harness.paths import suites_path, workloads_root


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "list",
        help="list suites with their strategies, scenarios and parameters",
        formatter_class=FORMATTER,
        description=help_text("""
            List every suite of the workloads folder and of the folders in
            $HARNESS_SUITES_PATH (searched in this order), with its folder and what its
            binary's `describe` offers: strategies, scenarios, parameters (type, default,
            valid values, help) and metrics. A suite whose binary is missing is listed as not
            built; one with the name of an earlier suite is listed as shadowed by it (run it
            by its folder's path).
            """),
        epilog=help_text("""
            examples:
              harness list
              harness list --json | jq '.[].strategies[].name'
              HARNESS_SUITES_PATH=~/suites harness list
            """),
    )
    p.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    catalog = find_suites(workloads_root(), suites_path())
    entries: list[dict[str, Any]] = []
    for suite in catalog.suites.values():
        description: Description | None = None
        problem = unmet_requirements(suite) or (None if suite.built else NOT_BUILT)
        if problem is None:
            try:
                description = describe_cached(suite)
            except DescribeError as err:
                problem = f"describe failed: {err}"
        entries.append(suite_entry(suite, description, problem))
        for hidden in catalog.hidden_by(suite):
            problem = f"shadowed by {suite.folder}; run it by its path: harness run {hidden.folder}"
            entries.append(suite_entry(hidden, None, problem, shadowed_by=suite))
    if args.json:
        print(json.dumps(entries, indent=2))
    else:
        print_suites_kept(entries, consoles.stdout())
    return 1 if any(e["status"].startswith("describe failed") for e in entries) else 0
