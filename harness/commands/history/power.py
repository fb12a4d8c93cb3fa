"""`harness history power`: each series' noise and the smallest change the detection flags
in it, the night it lands and within three nights."""

from __future__ import annotations

import argparse
import dataclasses
import json
from itertools import groupby

from rich.table import Table
from rich.text import Text

from harness.commands.consoles import stdout
from harness.commands.history.reading import add_db_option, read
from harness.commands.parsing import FORMATTER, Commands, help_text
from harness.errors import BadInput
from harness.format.cells import param_text, varying_params
from harness.format.names import printable
from harness.format.numbers import DASH, percent
from harness.history.power import MIN_RUNS, POWER, SeriesPower, series_power
from harness.tables import new_table

RANK = 7


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser(
        "power",
        help="each series' noise and the smallest change the detection flags in it",
        formatter_class=FORMATTER,
        description=help_text(f"""
            For each series, its noise from its last 31 runs (within: the relative standard
            deviation of a run's repeats, pooled; between: that of the nightly level beyond
            what within explains) and its minimum detectable change: the smallest step that
            the detection flags in {POWER:.0%} of series with that noise and the repeats
            the series gets, the night the step lands and within three nights. A dash: fewer
            than {MIN_RUNS} runs, or no step up to 100% would be flagged (a night needs 5
            repeats). docs/dashboard.md says how it is computed.
            """),
    )
    p.add_argument("--suite", metavar="S", help="only the series of suite S")
    p.add_argument("--metric", metavar="M", help="only the series of metric M (ops_per_sec)")
    p.add_argument(
        "--json",
        action="store_true",
        help="a JSON list of {suite, strategy, scenario, params, metric, machine, runs, "
        "repeats, noise, min_detectable}, the figures as fractions",
    )
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    found = read(args, lambda conn: series_power(conn, suite=args.suite))
    found = [p for p in found if args.metric is None or p.metric == args.metric]
    if not found:
        what = f"of suite {args.suite!r} " if args.suite else ""
        what += f"of metric {args.metric!r} " if args.metric else ""
        raise BadInput(f"no series {what}in the history (harness history list shows its runs)")
    if args.json:
        print(json.dumps([dataclasses.asdict(item) for item in found], indent=2))
        return 0
    console = stdout()
    for (suite, machine), rows in groupby(found, key=lambda p: (p.suite, p.machine)):
        console.print(_table(f"{printable(suite)} on {printable(machine)}", list(rows)))
    console.print(
        f"minimum detectable change: the step flagged in {POWER:.0%} of series with that noise "
        f"and repeats; {DASH}: fewer than {MIN_RUNS} runs, or none up to 100%"
    )
    return 0


def _table(title: str, rows: list[SeriesPower]) -> Table:
    table = new_table(title, "wide", roomy=False)
    for heading in ("strategy", "scenario", "params", "metric"):
        table.add_column(heading)
    for heading in ("runs", "repeats", "within", "between", "night", "3 nights"):
        table.add_column(heading, justify="right")
    # The parameters whose value differs between the table's series (as the run tables).
    shown = sorted(varying_params([{"params": row.params} for row in rows]))
    for row in rows:
        params = " ".join(f"{printable(k)}={param_text(row.params.get(k))}" for k in shown)
        table.add_row(
            printable(row.strategy),
            printable(row.scenario),
            params or DASH,
            printable(row.metric),
            str(row.runs),
            str(row.repeats),
            _share(row.noise.within),
            _share(row.noise.between),
            Text(_share(row.min_detectable.night), style="bold"),
            Text(_share(row.min_detectable.three_nights), style="bold"),
        )
    return table


def _share(value: float | None) -> str:
    return DASH if value is None else percent(value)
