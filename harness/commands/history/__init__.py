"""`harness history`: import runs into the history database, list them, report regressions,
acknowledge expected changes, export every point. Each action is a module of this package
with its parser and its handler (ACTION, add_parser); this one assembles them."""

from __future__ import annotations

import importlib
import pkgutil

from harness.commands.parsing import FORMATTER, Commands, help_text


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "history",
        help="the history: import, confirm, regressions, bisect, power, list, ack, export",
        formatter_class=FORMATTER,
        description=help_text("""
            The history database holds every imported run's medians, intervals and repeats,
            per machine (a fingerprint of its CPU, memory and settings) and series (suite,
            strategy, scenario, parameters, metric). Importing finds change points per series
            and groups those of one run into an event; `regressions` lists the worsened
            series and exits 1 while one of them is not acknowledged; `bisect EVENT` runs the
            `harness bisect` of an event's regressed series and keeps its result with it.
            """),
        epilog=help_text("""
            examples:
              harness history import                     every run under results/runs
              harness history regressions --json         for cron and CI (exit 1: open ones)
              harness history ack 3 --reason "timer wheel traded latency for throughput"
              harness history export --format csv > points.csv
              harness history bisect 3                   find the commit, keep the result
              harness history power --suite timers       the change each series can show
              HARNESS_DB=postgresql+psycopg://bench@db/harness harness history import
            """),
    )
    verbs = p.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    actions = [
        importlib.import_module(f"{__name__}.{m.name}")
        for m in pkgutil.iter_modules(__path__)
        if m.name != "reading"
    ]
    # `harness history --help` lists them in the order of their RANK.
    for action in sorted(actions, key=lambda a: (a.RANK, a.__name__)):
        action.add_parser(verbs)
