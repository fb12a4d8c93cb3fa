"""`harness doctor`: is this machine ready for quiet benchmarks and for the probes?"""

from __future__ import annotations

import argparse

from harness.commands import consoles
from harness.commands.parsing import FORMATTER, Commands, help_text


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "doctor",
        help="check this machine for benchmarking",
        formatter_class=FORMATTER,
        description=help_text("""
            Check what makes results noisy (CPU governor, turbo, SMT, isolated CPUs) and what
            probes and profiles need (privileges, BTF, perf_event_paranoid, tools).
            """),
        epilog=help_text("""
            examples:
              harness doctor
              harness doctor --json
            """),
    )
    p.add_argument("--json", action="store_true", help="print the checks as JSON on stdout")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from harness import doctor  # numpy, the probes: not for --help

    return doctor.doctor_command(consoles.stdout(), args.json)
