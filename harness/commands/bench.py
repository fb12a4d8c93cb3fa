"""`harness bench`: every suite's [bench] matrix (what `make bench` calls)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from harness.catalog import choose, require_built, unmet_requirements
from harness.commands import consoles
from harness.commands.parsing import (
    EXIT_CODES,
    FORMATTER,
    Commands,
    add_wide_option,
    help_text,
    names,
)
from harness.commands.probe_options import add_probe_options, probe_specs, profile_settings
from harness.cpuset import auto_split, online_cpus
from harness.describe import describe
from harness.errors import BadInput
from harness.paths import lock_path, results_root, suites_path, workloads_root
from harness.probes import registry
from harness.probes.probe import ProbeSpec
from harness.run.plan import Plan, plan_matrix
from harness.runlock import RunLock
from harness.suites import Suite


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "bench",
        help="run every suite's [bench] matrix (what `make bench` calls)",
        formatter_class=FORMATTER,
        description=help_text("""
            For each suite, one run of the matrix in its suite.toml [bench] table (scaled to
            this machine's logical CPUs by [bench.scale]); with --quick, [quick] overrides it.
            Prints each suite's table and, at the end, every run directory.
            """),
        epilog=help_text("""
            examples:
              harness bench
              harness bench --suites timers --quick
              harness bench --suites timers,~/suites/sumbench
            """)
        + "\n"
        + EXIT_CODES,
    )
    p.add_argument(
        "--suites",
        type=names,
        metavar="A,B",
        help="comma-separated suites, by name or folder path (default: all)",
    )
    p.add_argument("--quick", action="store_true", help="short runs: [quick] overrides [bench]")
    p.add_argument(
        "--fixed-repeats",
        action="store_true",
        help="every suite its [bench] (or [quick]) repeats; by default a suite's repeats follow "
        "its series' noise in the history on this machine (docs/dashboard.md, \"Sizing the "
        'nightly")',
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="print the plan (suites, cells, repeats, estimated duration) and stop",
    )
    add_probe_options(p)
    add_wide_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    roots = [workloads_root(), *suites_path()]
    chosen = choose(args.suites, roots[0], roots[1:])
    if args.suites is None:  # every suite: one that cannot run here is skipped, with the reason
        for suite in chosen:
            if (unmet := unmet_requirements(suite)) is not None:
                print(f"harness: skipping suite '{suite.name}': {unmet}", file=sys.stderr)
        chosen = [s for s in chosen if unmet_requirements(s) is None]
    suites = [require_built(s) for s in chosen]
    probes = probe_specs(args)
    if not suites:
        where = ", ".join(str(root) for root in roots)
        raise BadInput(f"no suites under {where} (a suite is a folder with a suite.toml)")
    out_dir = results_root() / "runs"
    # What runs the plans (numpy, pydantic): `bench --help` and a usage error go without.
    from harness.commands.runs import deadline_slack_s, run_plan, status_exit
    from harness.run.estimate import learn_startup, plan_lines, planned_s
    from harness.run.preflight import preflight

    slack_s = deadline_slack_s()
    cpus = os.cpu_count() or 1
    plans = learn_startup(_plans(suites, args, cpus, probes), out_dir, cpus)
    from harness.commands.bench_repeats import by_noise, confirm_line  # the history: SQLAlchemy

    notes: list[str] = []
    if not args.fixed_repeats:
        plans, notes = by_noise(plans)
    notes.append(confirm_line(plans))
    if args.plan:
        print("\n".join([*plan_lines(plans, cpus), *notes]))
        return 0
    exit_code = 0
    run_dirs: list[Path] = []
    preflight(plans, out_dir)  # bad input is exit 2 also while another run holds the lock
    missing = registry.unavailable_here(spec.name for plan in plans for spec in plan.probes)
    with RunLock(lock_path(), " ".join(args.command_line)):
        if missing:
            print(registry.unavailable_line(missing), file=sys.stderr, flush=True)
        print("\n".join([*plan_lines(plans, cpus), *notes]), flush=True)
        for i, plan in enumerate(plans):
            later_s = sum(planned_s(later) for later in plans[i + 1 :])
            record, status = run_plan(
                plan, out_dir, args.command_line, slack_s, consoles.stdout(), later_s, args.wide
            )
            run_dirs.append(record.run_dir)
            exit_code = max(exit_code, status_exit(record, status))
            if status == "interrupted":
                break
    if missing:
        print(registry.unavailable_line(missing), file=sys.stderr, flush=True)
    print("run directories:")
    for run_dir in run_dirs:
        print(f"  {run_dir}")
    return exit_code


def _plans(
    suites: list[Suite], args: argparse.Namespace, cpus: int, probes: tuple[ProbeSpec, ...]
) -> list[Plan]:
    plans = []
    for suite in suites:
        matrix = suite.quick if args.quick else suite.bench
        try:
            plan = plan_matrix(suite, describe(suite), matrix, cpus, probes)
            split = auto_split(online_cpus())
            plan = replace(plan, cpuset=split, cpuset_auto=split is not None)
            plans.append(replace(plan, profile=profile_settings(args)))
        except BadInput as err:
            raise BadInput(f"suite '{suite.name}': {err}") from err
    return plans
