"""`harness run SUITE`: one suite's cells, repeated, into a new run directory."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.catalog import choose, require_built
from harness.commands import consoles
from harness.commands.parsing import (
    EXIT_CODES,
    FORMATTER,
    Commands,
    Parser,
    add_wide_option,
    help_text,
    names,
    non_negative_float,
    non_negative_int,
    param_sweep,
    positive_float,
    positive_int,
)
from harness.commands.probe_options import add_probe_options, probe_specs, profile_settings
from harness.commands.runs import deadline_slack_s, run_plan, status_exit
from harness.cpuset import online_cpus, parse_cpuset, roles_of
from harness.describe import describe
from harness.errors import BadInput
from harness.hostinfo import gather_soon
from harness.paths import REPO_ROOT, lock_path, results_root, suites_path, workloads_root
from harness.run.bounds import MAX_CELLS, MAX_REPEATS, MAX_STEPS
from harness.run.plan import ORDERS, build_plan
from harness.runlock import RunLock


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "run",
        help="run one suite's strategies and write a run directory",
        formatter_class=FORMATTER,
        description=help_text("""
            Run every cell (strategies x swept parameters) of one suite REPEAT times, write
            <out>/<run_id>/run.json after every repeat, and print the summary table: medians
            with 95% intervals, and ratios to the suite's baseline strategy.
            """),
        epilog=help_text("""
            examples:
              harness run timers
              harness run ./mysuite                 # the suite in folder ./mysuite
              harness run timers --strategies none,tokio-timeout --param concurrency=64
              harness run timers --param concurrency=256 --param concurrency=4096  # a sweep
              harness run timers --scenario slow-tail --duration-s 1 --warmup-s 0.3 --repeat 3
              harness run timers --probes sched,bt:bpf/syscalls_per_op.bt
              harness run timers --probes none      # no eBPF at all
              harness run timers --probe-overhead   # what the probes cost in ops/s
              harness run timers --explain-repeats 2  # two repeats a cell with every probe
              harness run timers --json > run.json
              harness run timers --strategies none --rev main --rev my-branch  # faster?
            """)
        + "\n"
        + EXIT_CODES,
    )
    p.add_argument(
        "suite",
        metavar="SUITE",
        help="the suite to run: a name (see `harness list`), or the path of a suite's folder "
        "(an argument with a `/` or naming an existing folder), which may be anywhere",
    )
    _add_cell_options(p)
    _add_timing_options(p)
    add_probe_options(p)
    _add_probe_run_options(p)
    _add_output_options(p)
    _add_rev_option(p)
    add_wide_option(p)
    p.set_defaults(handler=handle)
    assert isinstance(p, Parser)  # the subparsers take the top-level parser's class
    p.precheck = _too_many_values


# The options in the order --help lists them: which cells, how long, which probes, where to.


def _add_cell_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--strategies",
        type=names,
        action="extend",
        metavar="A,B",
        help=(
            "comma-separated strategies, or the option again (default: those of suite.toml "
            "[bench], else all the suite's strategies)"
        ),
    )
    p.add_argument(
        "--scenario",
        type=names,
        action="extend",
        metavar="A,B",
        help="scenario, or comma-separated scenarios (or the option again), each a table of "
        "its own (default: the scenarios of suite.toml [bench], else the suite's default)",
    )
    p.add_argument(
        "--baseline",
        metavar="S",
        help="the strategy the others are compared with, in the ratios and the differential "
        "flame graphs (default: the suite's baseline)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="set a parameter; repeat a key to sweep it (cells = strategies x swept values)",
    )


def _add_timing_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--duration-s",
        type=positive_float,
        default=10.0,
        metavar="D",
        help="measured seconds per repeat (default: 10)",
    )
    p.add_argument(
        "--warmup-s",
        type=non_negative_float,
        default=2.0,
        metavar="W",
        help="warm-up seconds before each measured window (default: 2)",
    )
    p.add_argument(
        "--repeat",
        type=_repeat_count,
        default=5,
        metavar="N",
        help=f"repeats of every cell (default: 5, at most {MAX_REPEATS}); a run has at most "
        f"{MAX_CELLS:,} cells and {MAX_STEPS:,} repeats in all, and each cell must fit "
        "this machine's memory and disk by its workload's `needs`",
    )


def _add_probe_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--probe-overhead",
        action="store_true",
        help="also run each cell without probes and with each probe alone, and report "
        "ops/s with / without per probe (probe_overhead in run.json)",
    )
    p.add_argument(
        "--explain-repeats",
        type=non_negative_int,
        metavar="N",
        help="repeats of every cell with every probe, besides its --repeat measurement "
        "repeats that carry only the cheap ones (sched, gc) and give the figures: the stack "
        "and profile probes run on these only (default: 1 when one of them is asked for; 0: "
        "leave them out; at most --repeat; docs/probes.md)",
    )


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cpuset",
        action="append",
        default=[],
        metavar="ROLE=CPUS",
        help="pin the workload's processes by role, e.g. client=0-15,server=16-31 (roles: "
        "client = the first pid of ready, server = the others; see docs/workload-contract.md)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="directory to create the run directory in (default: $HARNESS_RESULTS/runs)",
    )
    p.add_argument(
        "--order",
        choices=ORDERS,
        default="interleaved",
        help="interleaved (default): every cell once per round, against drift; "
        "sequential: all repeats of a cell, then the next",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print run.json on stdout (the table goes to stderr)",
    )


def _add_rev_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rev",
        action="append",
        metavar="REV",
        help="twice: build the suite at git revision A and at B (each in a worktree of its "
        "own, never your checkout), run each cell's repeats with both builds interleaved "
        "(A B, B A... paired by round, no probes) and print B against A: the median of the "
        "rounds' ratios, its 95%% interval and the paired Wilcoxon p (docs/bisect.md)",
    )


def handle(args: argparse.Namespace) -> int:
    if args.rev:
        from harness.commands.revs import handle_revs  # git and worktrees: only when asked

        return handle_revs(args, param_sweep(args.param))
    suite = require_built(choose([args.suite], workloads_root(), suites_path())[0])
    probes = probe_specs(args)
    if args.probe_overhead and not probes:
        raise BadInput("--probe-overhead needs probes to measure, and --probes is none")
    sweep = param_sweep(args.param)
    out_dir: Path = args.out or results_root() / "runs"
    slack_s = deadline_slack_s()
    description = describe(suite)
    plan = build_plan(
        suite,
        description,
        strategies=args.strategies or suite.bench.strategies,
        scenarios=args.scenario or suite.bench.scenarios,
        sweep=sweep,
        duration_s=args.duration_s,
        warmup_s=args.warmup_s,
        repeats=args.repeat,
        order=args.order,
        probes=probes,
        probe_overhead=args.probe_overhead,
        explain_repeats=args.explain_repeats,
        baseline=args.baseline,
        profile=profile_settings(args),
        cpuset=parse_cpuset(args.cpuset, roles_of(description), online_cpus()),
    )
    # The input is valid as far as the harness can tell alone: while the run pipeline is
    # imported (numpy, pydantic) and the workload checks the cells, git, rustc and go say what
    # run.json records of the machine. `run --help` and input refused so far go without both.
    facts = gather_soon(REPO_ROOT, suite.folder)
    from harness.run.estimate import learn_startup
    from harness.run.preflight import preflight
    from harness.rundoc import jsonfile

    (plan,) = learn_startup([plan], out_dir, os.cpu_count() or 1)  # for the ETA
    preflight([plan], out_dir)  # bad input is exit 2 also while another run holds the lock
    with RunLock(lock_path(), " ".join(args.command_line)):
        table_console = consoles.stderr() if args.json else consoles.stdout()
        record, status = run_plan(
            plan, out_dir, args.command_line, slack_s, table_console, wide=args.wide, facts=facts
        )
    if args.json:
        print(jsonfile.dumps(record.run))
    where = sys.stderr if args.json else sys.stdout
    print(f"run directory: {record.run_dir}", file=where, flush=True)
    return status_exit(record, status)


def _repeat_count(text: str) -> int:
    value = positive_int(text)
    if value > MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_REPEATS}, got {text!r}")
    return value


def _too_many_values(args: Sequence[str]) -> str | None:
    """More values of one parameter than a run may have cells, counted as written (the
    exact `--param K=V` and `--param=K=V`), or None."""
    counts: dict[str, int] = {}
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            break
        if token == "--param":
            pair = next(tokens, "")
        elif token.startswith("--param="):
            pair = token.removeprefix("--param=")
        else:
            continue
        key = pair.partition("=")[0].strip()
        counts[key] = counts.get(key, 0) + 1
    for key, count in counts.items():
        if count > MAX_CELLS:
            return (
                f"--param {key}: {count:,} values, more than the {MAX_CELLS:,} cells a run may "
                "have (strategies x scenarios x swept values): sweep fewer values"
            )
    return None
