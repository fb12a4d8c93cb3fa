"""`harness compare RUN_A RUN_B`: how B differs from A, cell by cell and metric by metric."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.format.cells import param_text
from harness.format.metrics import (
    fitted_candidates,
    heading,
    headline_metrics,
    metric_columns,
    table_labels,
)
from harness.format.names import printable
from harness.format.notes import grouped, notes
from harness.format.numbers import DASH, human_p, is_time_metric
from harness.probes import registry
from harness.profiles.run_diff import diff_runs
from harness.rundoc import jsonfile
from harness.rundoc.model import Cell, RunDoc
from harness.stats import compare_samples, metric_values, params_key, summarize_values
from harness.tables import (
    VERDICT_STYLES,
    Layout,
    figure,
    fitted_table,
    fitting_table,
    new_table,
    ratio_figure,
)

CellKey = tuple[str, str, str, str]
LEGEND = (
    "A, B: median of the repeats [95% interval of the median]; B/A: ratio of medians "
    "[95% bootstrap interval]; p: Mann-Whitney U, two-sided; * and verdict: p < 0.05, "
    "better or worse by the metric's direction; inconclusive: too few repeats for "
    "p < 0.05 to be possible"
)
FITTED_LEGEND = (
    "B/A: ratio of medians [95% bootstrap interval]; * Mann-Whitney U two-sided p < 0.05 "
    "(green better, red worse by the metric's direction)"
)
RESULT_FIELDS = ("ratio", "ci95_low", "ci95_high", "p_value", "significant", "verdict", "reason")


def cell_key(run: RunDoc, cell: Cell) -> CellKey:
    return run.suite, cell.strategy, cell.scenario, params_key(cell.params)


def json_cell_key(doc: Mapping[str, Any], cell: Mapping[str, Any]) -> CellKey:
    """cell_key of run.json's dicts, for profiles/run_diff.py which reads those."""
    return (
        str(doc["suite"]),
        str(cell["strategy"]),
        str(cell["scenario"]),
        params_key(cell["params"]),
    )


def declared_metrics(a: RunDoc, b: RunDoc) -> list[Mapping[str, Any]]:
    """Metrics either run declares, A's declaration first when both name one."""
    merged: dict[str, Mapping[str, Any]] = {}
    for run in (b, a):
        for declared in run.metrics:
            merged[declared.name] = jsonfile.as_json(declared)
    order = [m.name for run in (a, b) for m in run.metrics]
    # Runs recorded before the probe metrics were declared still have them in their repeats.
    for metric in registry.declared_metrics():
        merged.setdefault(metric["name"], metric)
        order.append(metric["name"])
    return [merged[name] for name in dict.fromkeys(order)]


def _side(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    summary = summarize_values(values)
    return {key: summary[key] for key in ("median", "ci95_low", "ci95_high", "ci_coverage", "n")}


def _identity(run: RunDoc, cell: Cell) -> dict[str, Any]:
    return {
        "suite": run.suite,
        "strategy": cell.strategy,
        "scenario": cell.scenario,
        "params": dict(cell.params),
    }


def _values(cell: Cell, metric: str) -> list[float]:
    return metric_values({"repeats": cell.repeats}, metric)


def _only_in(run: RunDoc, cell: Cell, side: str) -> dict[str, Any]:
    other = "B" if side == "A" else "A"
    return _identity(run, cell) | {
        "metric": None,
        "better": None,
        "a": None,
        "b": None,
        "ratio": None,
        "ci95_low": None,
        "ci95_high": None,
        "p_value": None,
        "significant": False,
        "verdict": f"only in {side}",
        "reason": f"no cell with this strategy, scenario and params in run {other}",
    }


def compare_runs(a: RunDoc, b: RunDoc) -> list[dict[str, Any]]:
    """One entry per matched cell and metric (ratio B/A), then one per unmatched cell."""
    cells_a = {cell_key(a, cell): cell for cell in a.cells}
    cells_b = {cell_key(b, cell): cell for cell in b.cells}
    metrics = declared_metrics(a, b)
    entries: list[dict[str, Any]] = []
    for key, cell_a in cells_a.items():
        cell_b = cells_b.get(key)
        if cell_b is None:
            continue
        for metric in metrics:
            name, better = str(metric["name"]), metric.get("better")
            values_a, values_b = _values(cell_a, name), _values(cell_b, name)
            if not values_a and not values_b:
                continue  # neither run reports it for this cell: nothing to say
            result = compare_samples(values_a, values_b, better)
            entry = _identity(a, cell_a) | {
                "metric": name,
                "better": better,
                "a": _side(values_a),
                "b": _side(values_b),
            }
            entry |= {field: result[field] for field in RESULT_FIELDS}
            if not values_a or not values_b:
                entry["reason"] = f"run {'A' if not values_a else 'B'} has no values of {name}"
            entries.append(entry)
    entries += [_only_in(a, cell, "A") for key, cell in cells_a.items() if key not in cells_b]
    entries += [_only_in(b, cell, "B") for key, cell in cells_b.items() if key not in cells_a]
    return entries


def _describe(label: str, run: RunDoc) -> Text:
    host, git = run.host, run.git
    commit = (git.commit or "no commit")[:10] + (" dirty" if git.dirty else "")
    return Text(
        f"{label}  {run.run_id} · {printable(run.suite)} · {run.status} · git {commit}"
        f" · host {host.hostname} ({host.cpu_model}, {host.logical_cpus} CPUs)"
    )


def _warnings(a: RunDoc, b: RunDoc) -> list[str]:
    found = []
    if a.suite != b.suite:
        found.append(
            f"the runs are of different suites ({printable(a.suite)}, {printable(b.suite)})"
        )
    differing = [
        key
        for key in ("hostname", "cpu_model", "logical_cpus", "governor", "smt", "turbo")
        if getattr(a.host, key) != getattr(b.host, key)
    ]
    if differing:
        found.append(f"the hosts differ in {', '.join(differing)}: part of any change is the host")
    if a.config.duration_s != b.config.duration_s:
        found.append(f"duration_s differs: {a.config.duration_s} in A, {b.config.duration_s} in B")
    if a.config.warmup_s != b.config.warmup_s:
        found.append(f"warmup_s differs: {a.config.warmup_s} in A, {b.config.warmup_s} in B")
    return found


def _cell_columns(table: Table, entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """Add the columns that tell cells apart (strategy, the scenario when there are several,
    the params that vary); returns the names of those params."""
    param_names = dict.fromkeys(name for e in entries for name in e["params"])
    params = [
        name
        for name in param_names
        if len({params_key({"v": e["params"].get(name)}) for e in entries}) > 1
    ]
    table.add_column("strategy", no_wrap=True, overflow="fold")
    if len({str(e["scenario"]) for e in entries}) > 1:
        table.add_column("scenario", no_wrap=True, overflow="fold")
    for name in params:
        table.add_column(Text(printable(name)), justify="right", no_wrap=True, overflow="fold")
    return params


def _cell_row(entry: Mapping[str, Any], scenarios: bool, params: Sequence[str]) -> list[Text | str]:
    row: list[Text | str] = [Text(printable(entry["strategy"]))]
    if scenarios:
        row.append(Text(printable(entry["scenario"])))
    return row + [Text(param_text(entry["params"].get(param))) for param in params]


def comparison_table(
    entries: Sequence[Mapping[str, Any]], units: Mapping[str, str], layout: Layout
) -> Table:
    """--wide: rows are (cell, metric); a rule separates cells. Narrow tables fold p into B/A."""
    table = new_table(None, layout)
    wide = layout == "wide"
    params = _cell_columns(table, entries)
    scenarios = len({str(e["scenario"]) for e in entries}) > 1
    table.add_column("metric", no_wrap=True, overflow="fold")
    table.add_column("A", justify="right", overflow="fold")
    table.add_column("B", justify="right", overflow="fold")
    table.add_column("B/A", justify="right", overflow="fold")
    if wide:
        table.add_column("p", justify="right", no_wrap=True, overflow="fold")
    table.add_column("verdict", no_wrap=True, overflow="fold")

    for index, entry in enumerate(entries):
        name = str(entry["metric"])
        time_ns = is_time_metric(name, units.get(name))
        row = _cell_row(entry, scenarios, params)
        row += [Text(printable(name)), figure(entry["a"], time_ns, layout)]
        row.append(figure(entry["b"], time_ns, layout))
        row.append(ratio_figure(entry, layout))
        if wide:
            row.append(DASH if entry["p_value"] is None else human_p(float(entry["p_value"])))
        verdict = str(entry["verdict"])
        row.append(Text(verdict, style=VERDICT_STYLES.get(verdict, "")))
        following = entries[index + 1] if index + 1 < len(entries) else None
        same_cell = following is not None and all(
            following[key] == entry[key] for key in ("strategy", "scenario", "params")
        )
        table.add_row(*row, end_section=not same_cell)
    return table


def ratio_table(
    cells: Sequence[Mapping[str, Mapping[str, Any]]],
    headings: Mapping[str, str],
    columns: Sequence[str],
    layout: Layout,
    full: bool,
) -> Table:
    """The default table: a row a cell, a column a metric, each B/A with its * mark and
    interval. `full` gives it the roomy gaps of --wide (the default table is not)."""
    entries = [entry for cell in cells for entry in cell.values()]
    table = new_table("B/A, the ratio of B's median to A's", layout, roomy=full)
    params = _cell_columns(table, entries)
    scenarios = len({str(e["scenario"]) for e in entries}) > 1
    for name in columns:
        table.add_column(headings[name], justify="right", overflow="fold")
    for cell in cells:
        row = _cell_row(next(iter(cell.values())), scenarios, params)
        table.add_row(*row, *(ratio_figure(cell.get(name), layout) for name in columns))
    return table


def by_cell(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Mapping[str, Any]]]:
    """The matched entries of each cell, metric -> entry, cells in A's order."""
    cells: dict[tuple[str, str, str], dict[str, Mapping[str, Any]]] = {}
    for e in entries:
        key = (str(e["strategy"]), str(e["scenario"]), params_key(e["params"]))
        cells.setdefault(key, {})[str(e["metric"])] = e
    return list(cells.values())


def fitted_comparison(
    matched: Sequence[Mapping[str, Any]],
    declared: Sequence[Mapping[str, Any]],
    console: Console,
) -> tuple[Table, list[str], list[str]]:
    """The default table, the metrics it shows and those it left out: the headline metrics
    first, then CPU per op and the probes' figures, as many as fit the console on one line a
    row (the run table's choice, harness.tables.fitted_table)."""
    declaring = {"metrics": declared}
    units = {str(m["name"]): str(m.get("unit", "")) for m in declared}
    labels = table_labels(declaring, registry.columns())
    headline = headline_metrics(declaring)
    present = dict.fromkeys(str(e["metric"]) for e in matched)
    # A run of metrics none of the tables know still gets its first one.
    probe_columns = registry.columns()
    columns = metric_columns([present], headline, probe_columns)
    candidates = fitted_candidates(columns, headline, units, probe_columns) or [next(iter(present))]
    headings = {name: heading(name, labels, units) for name in candidates}
    build = partial(ratio_table, by_cell(matched), headings)
    table, chosen = fitted_table(build, candidates, candidates[:1], console)
    left_out = [name for name in (*candidates, *present) if name not in chosen]
    return table, chosen, [printable(labels.get(name, name)) for name in dict.fromkeys(left_out)]


def render(
    a: RunDoc,
    b: RunDoc,
    entries: Sequence[Mapping[str, Any]],
    console: Console,
    wide: bool = False,
) -> None:
    """Both runs, warnings, the table and its notes. By default the table fits the console,
    a line a cell with the B/A ratios; `wide`: a row per cell and metric with A, B and p."""
    console.print(_describe("A", a))
    console.print(_describe("B", b))
    for note in _warnings(a, b):
        console.print(Text(f"warning: {note}", style="yellow"))
    matched = [e for e in entries if e["metric"] is not None]
    declared = declared_metrics(a, b)
    units = {str(m["name"]): str(m.get("unit", "")) for m in declared}
    noted = matched
    if not matched:
        console.print("no cell appears in both runs")
    elif wide:
        console.print(
            fitting_table(lambda layout: comparison_table(matched, units, layout), console)
        )
    else:
        table, chosen, hidden = fitted_comparison(matched, declared, console)
        console.print(table)
        noted = [e for e in matched if e["metric"] in chosen]  # notes on the figures shown
        console.print(
            Text(
                f"{len(hidden)} more column{'s' if len(hidden) != 1 else ''} "
                f"({', '.join(hidden)}), A's and B's medians, p and the verdicts: --wide, --json"
                if hidden
                else "A's and B's medians, p and the verdicts: --wide, --json",
                style="dim",
            )
        )
    for entry in entries:
        if entry["metric"] is None:
            params = " ".join(f"{printable(k)}={param_text(v)}" for k, v in entry["params"].items())
            where = f"{printable(entry['strategy'])} · {printable(entry['scenario'])}"
            console.print(Text(f"{entry['verdict']}: {where}" + (f" · {params}" if params else "")))
    lines = notes(noted, strategy_key="strategy")
    if not wide:
        cells = {
            (e["strategy"], e["scenario"], params_key(e["params"])) for e in noted if e["reason"]
        }
        which = f"{len(cells)} cell{'s' if len(cells) > 1 else ''}"
        lines = grouped(
            lines, f"{len(lines)} notes on missing ratios or p-values ({which}): --wide"
        )
    for line in lines:
        console.print(Text(line, style="yellow"))
    console.print(Text(LEGEND if wide else FITTED_LEGEND, style="dim"))


def compare_command(
    run_a: Path, run_b: Path, console: Console, as_json: bool, wide: bool = False
) -> int:
    """Exit 0 after comparing; 2 when either path is not a readable run."""
    try:
        a, b = jsonfile.load_run(run_a), jsonfile.load_run(run_b)
    except jsonfile.RunLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    entries = compare_runs(a, b)
    docs = jsonfile.as_json(a), jsonfile.as_json(b)
    graphs, missing = diff_runs(docs[0], run_dir(run_a), docs[1], run_dir(run_b), json_cell_key)
    if as_json:
        console.out(json.dumps(entries, indent=2), highlight=False)
    else:
        render(a, b, entries, console, wide)
    if not wide:
        by_reason: dict[str, int] = {}  # the lines are "cell id: reason"; reason -> cells
        for line in missing:
            reason = line.partition(": ")[2]
            by_reason[reason] = by_reason.get(reason, 0) + 1
        reasons = "; ".join(f"{reason} ({n})" for reason, n in by_reason.items())
        missing = grouped(missing, f"{len(missing)} cells: {reasons}; --wide names each")
    out = Console(stderr=True) if as_json else console
    for graph in graphs:
        # Whole, for a click or a copy: the terminal wraps a path wider than it, rich would
        # break it with a newline.
        out.print(f"differential flame graph (A -> B): {graph}", highlight=False, soft_wrap=True)
    for line in missing:
        out.print(Text(f"no differential graph for {printable(line)}", style="dim"))
    return 0


def run_dir(path: Path) -> Path:
    return path if path.is_dir() else path.parent
