"""`harness bisect TARGET --good REV --bad REV`: the first commit whose build of one cell is
worse than the good end's, each commit built in a git worktree of its own and measured
against the good end's build interleaved, paired by round."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.bisect import bisection, why
from harness.bisect.cells import Choice, one_cell_check
from harness.bisect.duet import Stopped, Timing
from harness.bisect.target import find_target
from harness.commands import consoles
from harness.commands.parsing import (
    EXIT_CODES,
    FORMATTER,
    Commands,
    help_text,
    names,
    non_negative_float,
    non_negative_int,
    param_sweep,
    positive_float,
    positive_int,
)
from harness.commands.runs import deadline_slack_s, run_plan
from harness.describe import describe
from harness.errors import BadInput
from harness.paths import lock_path
from harness.probes.spec import parse_probes
from harness.run.plan import Cell, build_plan
from harness.runlock import RunLock
from harness.suites import Suite

DEFAULT_ROUNDS = 6  # the fewest with which a paired p can go below 0.05
DEFAULT_MAX_ROUNDS = 18
DEFAULT_EXPLAIN_REPEATS = 3


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "bisect",
        help="find the commit that made one cell of a suite worse",
        formatter_class=FORMATTER,
        description=help_text("""
            Find the first commit between --good and --bad whose build of one cell (one
            strategy, scenario and parameter set) is worse in one metric than the good end's.
            Each commit tested is checked out with `git worktree add --detach` under the
            bisection's folder (<results>/bisect/<id>/), never in your working tree, index
            or HEAD, and built with the suite's own build step; Rust builds share one
            CARGO_TARGET_DIR there, so each rebuild is incremental. A commit that does not
            build is skipped, as `git bisect skip` does.

            First the bad end is measured against the good end: if it is not worse, the
            bisection says "no regression in this range" and stops. Each step then measures
            the candidate's build against the good end's interleaved (A B, B A, ... within
            one run) and takes the ratio of each round: its median, its 95% interval from
            order statistics and the Wilcoxon signed-rank p, as --probe-overhead does. A
            candidate is good when the whole interval is short of half the range's effect,
            bad when it is worse than the good end (the whole interval on the worse side of
            1, p < 0.05) and reaches past that half; else more rounds, up to --max-rounds,
            and then the bisection ends "undecided between X and Y" rather than guess.

            The worktrees and their builds are removed at the end, also after Ctrl-C; after a
            kill, the next bisection reclaims them. The folder keeps bisect.json, each
            step's rounds and the build logs (docs/bisect.md).
            """),
        epilog=help_text("""
            examples:
              harness bisect timers --good v1.2 --bad main --strategies none
              harness bisect ~/src/app/bench --good HEAD~16 --bad HEAD --metric p99_ns
              harness bisect timers --good A --bad B --strategies none --json > bisect.json
            """)
        + "\n"
        + EXIT_CODES,
    )
    p.add_argument(
        "suite",
        metavar="TARGET",
        help="a suite of this repository by name, or the path of a suite's folder inside any "
        "git repository",
    )
    p.add_argument("--good", required=True, metavar="REV", help="a commit known good")
    p.add_argument(
        "--bad", required=True, metavar="REV", help="a commit known bad, --good's descendant"
    )
    add_cell_options(p, one=True)
    add_bisection_options(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print bisect.json on stdout (first_bad, last_good, effect, steps, finding, "
        "diff_flamegraph; the progress goes to stderr)",
    )
    p.set_defaults(handler=handle)


def add_bisection_options(p: argparse.ArgumentParser) -> None:
    """How long a bisection measures, and whether it explains: `harness history bisect`
    passes them on."""
    add_duet_options(p)
    p.add_argument(
        "--max-rounds",
        type=positive_int,
        default=DEFAULT_MAX_ROUNDS,
        metavar="N",
        help=f"rounds an undecided step may grow to, --rounds at a time (default: "
        f"{DEFAULT_MAX_ROUNDS})",
    )
    p.add_argument(
        "--explain-repeats",
        type=non_negative_int,
        default=DEFAULT_EXPLAIN_REPEATS,
        metavar="N",
        help="once found, a run of N repeats of the last good and of the first bad build with "
        "the sched, on-CPU, futex and off-wake probes: the finding (CPU per op, the frames "
        "that grew, off-CPU, wake-ups, context switches, run-queue and futex wait per op) "
        f"and the differential flame graph (default: {DEFAULT_EXPLAIN_REPEATS}; 0: none)",
    )


def add_cell_options(p: argparse.ArgumentParser, one: bool) -> None:
    what = "the strategy" if one else "comma-separated strategies"
    p.add_argument(
        "--strategies",
        type=names,
        action="extend",
        metavar="S",
        help=f"{what} (default: the suite's baseline)",
    )
    p.add_argument("--scenario", type=names, action="extend", metavar="X", help="the scenario")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="K=V",
        help="set a parameter, once per key",
    )
    p.add_argument(
        "--metric",
        metavar="M",
        help="the metric that decides (default: the suite's headline metric, its direction "
        "from the suite's describe)",
    )


def add_duet_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"rounds of a step: each runs both builds once (default: {DEFAULT_ROUNDS}, the "
        "fewest with which a paired p can go below 0.05)",
    )
    p.add_argument(
        "--duration-s",
        type=positive_float,
        default=5.0,
        metavar="D",
        help="measured seconds per repeat (default: 5)",
    )
    p.add_argument(
        "--warmup-s",
        type=non_negative_float,
        default=1.0,
        metavar="W",
        help="warm-up seconds before each measured window (default: 1)",
    )


def handle(args: argparse.Namespace) -> int:
    doc = bisect(args)
    if args.json:
        print(json.dumps(doc, indent=2))
    print(f"bisect folder: {doc.get('folder')}", file=sys.stderr, flush=True)
    return 0


def bisect(args: argparse.Namespace) -> dict[str, Any]:
    """The bisection the parsed command line asks for, its progress on stderr; bisect.json's
    document (Stopped when interrupted, after bisect.json says so)."""
    choice = Choice(
        strategies=tuple(args.strategies or ()),
        scenarios=tuple(args.scenario or ()),
        sweep=param_sweep(args.param),
        metric=args.metric,
    )
    one_cell_check(choice)
    if args.max_rounds < args.rounds:
        raise BadInput(f"--max-rounds {args.max_rounds} is fewer than --rounds {args.rounds}")
    target = find_target(args.suite)
    good, bad, commits = bisection.check(target, args.good, args.bad)
    request = bisection.Request(
        target=target,
        good=good,
        bad=bad,
        choice=choice,
        timing=Timing(args.duration_s, args.warmup_s, deadline_slack_s()),
        rounds=args.rounds,
        max_rounds=args.max_rounds,
    )

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    explain = _explainer(args, say) if args.explain_repeats else None
    with RunLock(lock_path(), " ".join(args.command_line)):
        return bisection.Bisection(request, say, explain).run(commits)


def _explainer(args: argparse.Namespace, say: bisection.Say) -> bisection.Explain:
    """The explanation: a run of each build, as `harness run` makes it, then why.explain."""

    def explain(good: Suite, bad: Suite, cell: Cell, folder: Path) -> why.Why:
        records = []
        for suite in (good, bad):
            plan = build_plan(
                suite,
                describe(suite),
                strategies=[cell.strategy],
                scenarios=[cell.scenario],
                sweep={key: [value] for key, value in cell.explicit.items()},
                duration_s=args.duration_s,
                warmup_s=args.warmup_s,
                repeats=args.explain_repeats,
                order="interleaved",
                probes=parse_probes(why.PROBES),
                explain_repeats=args.explain_repeats,
            )
            record, status = run_plan(
                plan, folder, args.command_line, deadline_slack_s(), consoles.stderr()
            )
            if status == "interrupted":
                raise Stopped("bisection interrupted while explaining")
            records.append(record)
        good_run, bad_run = records
        found = why.explain(good_run.run, good_run.run_dir, bad_run.run, bad_run.run_dir)
        for note in found.notes:
            say(f"bisect: why: {note}")
        return found

    return explain
