"""`harness probe --pid PID`: the probes against running processes, for a few seconds."""

from __future__ import annotations

import argparse
import sys

from harness.base.stop import stop_on_signals
from harness.base.writes import dumps
from harness.commands import consoles
from harness.commands.parsing import (
    EXIT_INTERRUPTED,
    FORMATTER,
    Commands,
    help_text,
    pid,
    positive_float,
)
from harness.commands.probe_options import KERNEL_STACKS_HELP, add_probes_option
from harness.errors import BadInput
from harness.probes import live, report
from harness.probes.spec import parse_probes
from harness.profiles.settings import ProfileSettings


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "probe",
        help="probe running processes for a few seconds",
        formatter_class=FORMATTER,
        description=help_text("""
            Attach probes to running processes (all their threads) for D seconds and print
            what they saw: threads by context switches and off-CPU time, who woke whom,
            contended futexes, the window difference of bpftrace scripts. The first --pid is
            the one bpftrace scripts get as $1. Exit 1 when no probe produced output.
            """),
        epilog=help_text("""
            examples:
              harness probe --pid 1234 --duration-s 5
              harness probe --pid 1234 --probes futex,bt:bpf/pthread_mutex_contention.bt \\
                            --duration-s 10 --json
            """),
    )
    p.add_argument(
        "--pid",
        type=pid,
        action="append",
        required=True,
        metavar="PID",
        help="a process to probe; repeat for several",
    )
    add_probes_option(p, recorded=False)
    p.add_argument(
        "--duration-s",
        type=positive_float,
        required=True,
        metavar="D",
        help="seconds to probe for",
    )
    p.add_argument("--kernel-stacks", action="store_true", help=KERNEL_STACKS_HELP)
    p.add_argument("--json", action="store_true", help="print the probes' JSON on stdout")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    pids = list(dict.fromkeys(args.pid))
    live.check_pids(pids)
    specs = parse_probes(args.probes)
    if not specs:
        raise BadInput("--probes none: nothing to probe")
    with stop_on_signals() as stop:
        profile = ProfileSettings(kernel_stacks=args.kernel_stacks)
        results = live.probe_pids(specs, pids, args.duration_s, stop, profile)
    doc = live.as_json(pids, args.duration_s, results)
    if args.json:
        print(dumps(doc))
    else:
        report.print_probe_report(doc, consoles.stdout())
    if stop.requested:
        print("harness: interrupted; the window was cut short", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0 if any(r.ok for r in results.values()) else 1
