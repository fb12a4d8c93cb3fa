"""`harness`: list, build, run and compare benchmark suites."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console

from harness import compare, doctor, tables
from harness.catalog import choose, find_suites
from harness.describe import DescribeError, Description, describe
from harness.errors import BadInput, HarnessError
from harness.hostinfo import collect_host, git_info
from harness.listing import print_suites, suite_entry
from harness.paths import REPO_ROOT, lock_path, results_root, suites_path, workloads_root
from harness.probes import live, report
from harness.probes.probe import ProbeSpec
from harness.probes.registry import names as probe_names
from harness.probes.spec import VALID as VALID_PROBES
from harness.probes.spec import parse_probes
from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS, parse_patterns
from harness.profiles.settings import CALLGRAPHS, DEFAULT_FREQUENCY_HZ, ProfileSettings
from harness.report import write_all
from harness.results import RunRecord, check_out_dir, dumps
from harness.run.plan import ORDERS, Plan, build_plan, plan_matrix
from harness.run.runner import execute
from harness.run.stop import stop_on_signals
from harness.rundoc import jsonfile
from harness.runlock import RunLock
from harness.suites import Suite

DEFAULT_DEADLINE_SLACK_S = 120.0
EXIT_INTERRUPTED = 130
LOG_WIDTH = 200
NOT_BUILT = "not built: run `make deps`"

EXIT_CODES = """\
exit codes:
  0    done (for run/bench: every repeat succeeded)
  1    some repeats failed (see cells[].failures in run.json), or another error
  2    bad input: unknown suite, strategy, scenario or parameter, a bad value, a suite not built
  3    another `harness run` or `harness bench` holds the machine's lock
  130  interrupted (Ctrl-C or SIGTERM): run.json keeps the completed repeats

environment:
  HARNESS_WORKLOADS          the folder of suites searched first (default: <repo>/workloads)
  HARNESS_SUITES_PATH        more folders of suites, colon-separated, searched after it in
                             order; of two suites with one name the first wins
  HARNESS_RESULTS            results folder; runs go to its runs/ (default: <repo>/results)
  HARNESS_LOCK               lock file (default: /run/lock/harness.lock, else /tmp/harness.lock)
  HARNESS_DEADLINE_SLACK_S   a repeat is killed after warm-up + duration + this (default: 120)
  HARNESS_PROBES             default of --probes for run and bench (default: all)
  HARNESS_BPF_BUILD          folder of the built probe collectors (default: <repo>/bpf/build)
"""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one `harness: error: ...` line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"harness: error: {message} (see `{self.prog} --help`)\n")


def _help(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def _pid(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a process id, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a process id >= 1, got {text!r}")
    return value


PROBES_HELP = (
    f"comma-separated probes: {VALID_PROBES} (default: $HARNESS_PROBES, else all = "
    f"{','.join(probe_names())}; a probe that cannot run here is recorded as unavailable, "
    "with the reason)"
)


def _probes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--probes", metavar="LIST", help=PROBES_HELP)
    parser.add_argument(
        "--perf-frequency",
        type=_positive_int,
        default=DEFAULT_FREQUENCY_HZ,
        metavar="HZ",
        help=f"oncpu: samples a second per CPU (default: {DEFAULT_FREQUENCY_HZ})",
    )
    parser.add_argument(
        "--callgraph",
        choices=CALLGRAPHS,
        default="fp",
        help="oncpu: stacks by frame pointers (default) or DWARF unwinding (sees through "
        "code built without frame pointers, such as glibc; costs more)",
    )
    parser.add_argument(
        "--mutex-patterns",
        type=_mutex_patterns,
        metavar="LIST",
        help="frame substrings that make a sample lock-related for mutex_share "
        "(case-insensitive; `+a,b` adds to the defaults: "
        f"{','.join(DEFAULT_MUTEX_PATTERNS)})",
    )


def _mutex_patterns(text: str) -> tuple[str, ...]:
    try:
        return parse_patterns(text)
    except BadInput as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _profile_settings(args: argparse.Namespace) -> ProfileSettings:
    return ProfileSettings(
        frequency_hz=args.perf_frequency,
        callgraph=args.callgraph,
        mutex_patterns=args.mutex_patterns or DEFAULT_MUTEX_PATTERNS,
    )


def _probe_specs(args: argparse.Namespace) -> tuple[ProbeSpec, ...]:
    """--probes, else $HARNESS_PROBES, else all."""
    return parse_probes(args.probes or os.environ.get("HARNESS_PROBES") or "all")


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of names, got {text!r}")
    return names


def build_parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="harness",
        formatter_class=fmt,
        description=_help("""
            Benchmark harness: runs the strategies of each suite (a folder with a suite.toml:
            those in workloads/, those in the folders of $HARNESS_SUITES_PATH, or any folder
            given by its path) several times, and reports medians with 95% intervals and
            ratios to a baseline.
            """),
        epilog=_help("""
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

    p = commands.add_parser(
        "list",
        help="list suites with their strategies, scenarios and parameters",
        formatter_class=fmt,
        description=_help("""
            List every suite of the workloads folder and of the folders in
            $HARNESS_SUITES_PATH (searched in this order), with its folder and what its
            binary's `describe` offers: strategies, scenarios, parameters (type, default,
            valid values, help) and metrics. A suite whose binary is missing is listed as not
            built; one with the name of an earlier suite is listed as shadowed by it (run it
            by its folder's path).
            """),
        epilog=_help("""
            examples:
              harness list
              harness list --json | jq '.[].strategies[].name'
              HARNESS_SUITES_PATH=~/suites harness list
            """),
    )
    p.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
    p.set_defaults(handler=cmd_list)

    p = commands.add_parser(
        "build",
        help="build the suites' binaries",
        formatter_class=fmt,
        description=_help("""
            Run each suite's `build` command (from its suite.toml) in the suite's folder,
            streaming its output. Stops at the first suite whose build fails.
            """),
        epilog=_help("""
            examples:
              harness build
              harness build --suites timers
              harness build --suites ~/suites/sumbench
            """),
    )
    p.add_argument(
        "--suites",
        type=_names,
        metavar="A,B",
        help="comma-separated suites, by name or folder path (default: all)",
    )
    p.set_defaults(handler=cmd_build)

    p = commands.add_parser(
        "run",
        help="run one suite's strategies and write a run directory",
        formatter_class=fmt,
        description=_help("""
            Run every cell (strategies x swept parameters) of one suite REPEAT times, write
            <out>/<run_id>/run.json after every repeat, and print the summary table: medians
            with 95% intervals, and ratios to the suite's baseline strategy.
            """),
        epilog=_help("""
            examples:
              harness run timers
              harness run ./mysuite                 # the suite in folder ./mysuite
              harness run timers --strategies none,tokio-timeout --param concurrency=64
              harness run timers --param concurrency=256 --param concurrency=4096  # a sweep
              harness run timers --scenario slow-tail --duration-s 1 --warmup-s 0.3 --repeat 3
              harness run timers --probes sched,bt:bpf/syscalls_per_op.bt
              harness run timers --probes none      # no eBPF at all
              harness run timers --probe-overhead   # what the probes cost in ops/s
              harness run timers --json > run.json
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
    p.add_argument(
        "--strategies",
        type=_names,
        metavar="A,B",
        help="comma-separated strategies (default: all the suite's strategies)",
    )
    p.add_argument(
        "--scenario",
        type=_names,
        metavar="A,B",
        help="scenario, or comma-separated scenarios, each a table of its own "
        "(default: the scenarios of suite.toml [bench], else the suite's default)",
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
    p.add_argument(
        "--duration-s",
        type=_positive_float,
        default=10.0,
        metavar="D",
        help="measured seconds per repeat (default: 10)",
    )
    p.add_argument(
        "--warmup-s",
        type=_non_negative_float,
        default=2.0,
        metavar="W",
        help="warm-up seconds before each measured window (default: 2)",
    )
    p.add_argument(
        "--repeat",
        type=_positive_int,
        default=5,
        metavar="N",
        help="repeats of every cell (default: 5)",
    )
    _probes_option(p)
    p.add_argument(
        "--probe-overhead",
        action="store_true",
        help="also run each cell without probes and with each probe alone, and report "
        "ops/s with / without per probe (probe_overhead in run.json)",
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
    p.set_defaults(handler=cmd_run)

    p = commands.add_parser(
        "bench",
        help="run every suite's [bench] matrix (what `make bench` calls)",
        formatter_class=fmt,
        description=_help("""
            For each suite, one run of the matrix in its suite.toml [bench] table (scaled to
            this machine's logical CPUs by [bench.scale]); with --quick, [quick] overrides it.
            Prints each suite's table and, at the end, every run directory.
            """),
        epilog=_help("""
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
        type=_names,
        metavar="A,B",
        help="comma-separated suites, by name or folder path (default: all)",
    )
    p.add_argument("--quick", action="store_true", help="short runs: [quick] overrides [bench]")
    _probes_option(p)
    p.set_defaults(handler=cmd_bench)

    p = commands.add_parser(
        "probe",
        help="probe running processes for a few seconds",
        formatter_class=fmt,
        description=_help("""
            Attach probes to running processes (all their threads) for D seconds and print
            what they saw: threads by context switches and off-CPU time, who woke whom,
            contended futexes, the window difference of bpftrace scripts. The first --pid is
            the one bpftrace scripts get as $1. Exit 1 when no probe produced output.
            """),
        epilog=_help("""
            examples:
              harness probe --pid 1234 --duration-s 5
              harness probe --pid 1234 --probes futex,bt:bpf/pthread_mutex_contention.bt \\
                            --duration-s 10 --json
            """),
    )
    p.add_argument(
        "--pid",
        type=_pid,
        action="append",
        required=True,
        metavar="PID",
        help="a process to probe; repeat for several",
    )
    p.add_argument(
        "--probes",
        default="all",
        metavar="LIST",
        help=f"comma-separated probes: {VALID_PROBES} (default: all = {','.join(probe_names())})",
    )
    p.add_argument(
        "--duration-s",
        type=_positive_float,
        required=True,
        metavar="D",
        help="seconds to probe for",
    )
    p.add_argument("--json", action="store_true", help="print the probes' JSON on stdout")
    p.set_defaults(handler=cmd_probe)

    p = commands.add_parser(
        "compare",
        help="compare two runs cell by cell",
        formatter_class=fmt,
        description=_help("""
            Compare the cells two runs have in common: ratio of B to A per metric with its
            95% interval and significance. Cells with an on-CPU profile in both runs also get
            a differential flame graph (A first: red is more in B), written under
            RUN_B/compare/<A's run id>/.
            """),
        epilog=_help("""
            examples:
              harness compare results/runs/20250101T000000Z-abc1234 \\
                              results/runs/20250102T000000Z-def5678
              harness compare old/run.json new/run.json --json
            """),
    )
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="run directory or run.json (before)")
    p.add_argument("run_b", type=Path, metavar="RUN_B", help="run directory or run.json (after)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON on stdout")
    p.set_defaults(handler=cmd_compare)

    p = commands.add_parser(
        "report",
        help="write a run's report.html and summary.md again",
        formatter_class=fmt,
        description=_help("""
            Rewrite report.html (tables, flame graph links, probe highlights; works offline)
            and summary.md (a write-up to paste into a pull request) from a run's run.json.
            `harness run` and `harness bench` write both at the end of every run.
            """),
    )
    p.add_argument("run", type=Path, metavar="RUN", help="run directory")
    p.set_defaults(handler=cmd_report)

    p = commands.add_parser(
        "doctor",
        help="check this machine for benchmarking",
        formatter_class=fmt,
        description=_help("""
            Check what makes results noisy (CPU governor, turbo, SMT, isolated CPUs) and what
            probes and profiles need (privileges, BTF, perf_event_paranoid, tools).
            """),
        epilog=_help("""
            examples:
              harness doctor
              harness doctor --json
            """),
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON on stdout")
    p.set_defaults(handler=cmd_doctor)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(args_list)
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


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        # Logs and pipes have no width: do not squeeze wide tables into rich's default 80.
        console.width = LOG_WIDTH
    return console


def _stdout() -> Console:
    return _console()


def _stderr() -> Console:
    return _console(stderr=True)


def _built(suite: Suite) -> Suite:
    if not suite.built:
        raise BadInput(f"suite '{suite.name}' is {NOT_BUILT} (missing {suite.binary})")
    return suite


def _deadline_slack_s() -> float:
    text = os.environ.get("HARNESS_DEADLINE_SLACK_S")
    if not text:
        return DEFAULT_DEADLINE_SLACK_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise BadInput(f"HARNESS_DEADLINE_SLACK_S must be a number of seconds > 0, got {text!r}")
    return value


def _sweep(pairs: Sequence[str]) -> dict[str, list[object]]:
    sweep: dict[str, list[object]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--param {pair!r}: expected KEY=VALUE, e.g. --param concurrency=64")
        sweep.setdefault(key.strip(), []).append(value)
    return sweep


def cmd_list(args: argparse.Namespace) -> int:
    catalog = find_suites(workloads_root(), suites_path())
    entries: list[dict[str, Any]] = []
    for suite in catalog.suites.values():
        description: Description | None = None
        problem = None if suite.built else NOT_BUILT
        if suite.built:
            try:
                description = describe(suite)
            except DescribeError as err:
                problem = f"describe failed: {err}"
        entries.append(suite_entry(suite, description, problem))
        for hidden in catalog.hidden_by(suite):
            problem = f"shadowed by {suite.folder}; run it by its path: harness run {hidden.folder}"
            entries.append(suite_entry(hidden, None, problem, shadowed_by=suite))
    if args.json:
        print(json.dumps(entries, indent=2))
    else:
        print_suites(entries, _stdout())
    return 1 if any(e["status"].startswith("describe failed") for e in entries) else 0


def cmd_build(args: argparse.Namespace) -> int:
    for suite in choose(args.suites, workloads_root(), suites_path()):
        if suite.build is None:
            print(f"harness: suite '{suite.name}' has no build command", file=sys.stderr)
            continue
        print(f"harness: building suite '{suite.name}': {suite.build}", file=sys.stderr, flush=True)
        done = subprocess.run(suite.build, shell=True, cwd=suite.folder, check=False)
        if done.returncode != 0:
            raise HarnessError(
                f"build of suite '{suite.name}' failed (exit code {done.returncode}): {suite.build}"
            )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    suite = _built(choose([args.suite], workloads_root(), suites_path())[0])
    probes = _probe_specs(args)
    if args.probe_overhead and not probes:
        raise BadInput("--probe-overhead needs probes to measure, and --probes is none")
    sweep = _sweep(args.param)
    out_dir: Path = args.out or results_root() / "runs"
    slack_s = _deadline_slack_s()
    with RunLock(lock_path(), " ".join(args.command_line)):
        plan = build_plan(
            suite,
            describe(suite),
            strategies=args.strategies,
            scenarios=args.scenario or suite.bench.scenarios,
            sweep=sweep,
            duration_s=args.duration_s,
            warmup_s=args.warmup_s,
            repeats=args.repeat,
            order=args.order,
            probes=probes,
            probe_overhead=args.probe_overhead,
            baseline=args.baseline,
            profile=_profile_settings(args),
        )
        check_out_dir(out_dir)
        table_console = _stderr() if args.json else _stdout()
        record, status = _run(plan, out_dir, args.command_line, slack_s, table_console)
    if args.json:
        print(jsonfile.dumps(record.run))
    where = sys.stderr if args.json else sys.stdout
    print(f"run directory: {record.run_dir}", file=where, flush=True)
    return _status_exit(record, status)


def cmd_bench(args: argparse.Namespace) -> int:
    roots = [workloads_root(), *suites_path()]
    suites = [_built(s) for s in choose(args.suites, roots[0], roots[1:])]
    probes = _probe_specs(args)
    if not suites:
        where = ", ".join(str(root) for root in roots)
        raise BadInput(f"no suites under {where} (a suite is a folder with a suite.toml)")
    out_dir = results_root() / "runs"
    slack_s = _deadline_slack_s()
    cpus = os.cpu_count() or 1
    exit_code = 0
    run_dirs: list[Path] = []
    with RunLock(lock_path(), " ".join(args.command_line)):
        plans = []
        for suite in suites:
            matrix = suite.quick if args.quick else suite.bench
            try:
                plan = plan_matrix(suite, describe(suite), matrix, cpus, probes)
                plans.append(replace(plan, profile=_profile_settings(args)))
            except BadInput as err:
                raise BadInput(f"suite '{suite.name}': {err}") from err
        check_out_dir(out_dir)
        for plan in plans:
            record, status = _run(plan, out_dir, args.command_line, slack_s, _stdout())
            run_dirs.append(record.run_dir)
            exit_code = max(exit_code, _status_exit(record, status))
            if status == "interrupted":
                break
    print("run directories:")
    for run_dir in run_dirs:
        print(f"  {run_dir}")
    return exit_code


def cmd_compare(args: argparse.Namespace) -> int:
    return compare.compare_command(args.run_a, args.run_b, _stdout(), args.json)


def cmd_report(args: argparse.Namespace) -> int:
    for path in write_all(args.run):
        print(path)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    return doctor.doctor_command(_stdout(), args.json)


def cmd_probe(args: argparse.Namespace) -> int:
    pids = list(dict.fromkeys(args.pid))
    live.check_pids(pids)
    specs = parse_probes(args.probes)
    if not specs:
        raise BadInput("--probes none: nothing to probe")
    with stop_on_signals() as stop:
        results = live.probe_pids(specs, pids, args.duration_s, stop)
    doc = live.as_json(pids, args.duration_s, results)
    if args.json:
        print(dumps(doc))
    else:
        report.print_probe_report(doc, _stdout())
    if stop.requested:
        print("harness: interrupted; the window was cut short", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0 if any(r.ok for r in results.values()) else 1


def _run(
    plan: Plan, out_dir: Path, command: Sequence[str], slack_s: float, table_console: Console
) -> tuple[RunRecord, str]:
    with stop_on_signals() as stop:
        record = RunRecord.create(
            out_dir, plan, git=git_info(REPO_ROOT), host=collect_host(), command=command
        )
        status = execute(plan, record, _stderr(), stop, slack_s)
        reports = write_all(record.run_dir)
    tables.print_run(jsonfile.as_json(record.run), table_console)
    for path in reports:
        print(f"{path.name}: {path}", file=sys.stderr if table_console.stderr else sys.stdout)
    return record, status


def _status_exit(record: RunRecord, status: str) -> int:
    successes, failures = record.counts()
    if status == "interrupted":
        print(
            f"harness: interrupted; {record.path} keeps the {successes} completed repeats",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if failures:
        print(
            f"harness: {failures} of {successes + failures} repeats failed in suite "
            f"'{record.run.suite}' (status {status}); exit codes and stderr are in "
            f"{record.path} under cells[].failures",
            file=sys.stderr,
        )
        return 1
    return 0
