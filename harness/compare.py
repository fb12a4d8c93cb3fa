"""`harness compare RUN_A RUN_B`: how B differs from A, cell by cell and metric by metric."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.format.cells import param_text
from harness.format.notes import notes
from harness.format.numbers import DASH, human_p, is_time_metric
from harness.probes import registry
from harness.profiles.run_diff import diff_runs
from harness.rundoc import jsonfile
from harness.stats import compare_samples, metric_values, params_key, summarize_values
from harness.tables import VERDICT_STYLES, Layout, figure, fitting_table, new_table, ratio_figure

CellKey = tuple[str, str, str, str]
RESULT_FIELDS = ("ratio", "ci95_low", "ci95_high", "p_value", "significant", "verdict", "reason")


def cell_key(doc: Mapping[str, Any], cell: Mapping[str, Any]) -> CellKey:
    return (
        str(doc.get("suite")),
        str(cell.get("strategy")),
        str(cell.get("scenario")),
        params_key(cell.get("params")),
    )


def declared_metrics(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Metrics either run declares, A's declaration first when both name one."""
    merged: dict[str, Mapping[str, Any]] = {}
    for doc in (b, a):
        for metric in doc.get("metrics") or []:
            merged[str(metric["name"])] = metric
    order = [str(m["name"]) for doc in (a, b) for m in doc.get("metrics") or []]
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


def _identity(doc: Mapping[str, Any], cell: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "suite": doc.get("suite"),
        "strategy": cell.get("strategy"),
        "scenario": cell.get("scenario"),
        "params": dict(cell.get("params") or {}),
    }


def _only_in(doc: Mapping[str, Any], cell: Mapping[str, Any], side: str) -> dict[str, Any]:
    other = "B" if side == "A" else "A"
    return _identity(doc, cell) | {
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


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per matched cell and metric (ratio B/A), then one per unmatched cell."""
    cells_a = {cell_key(a, cell): cell for cell in a.get("cells") or []}
    cells_b = {cell_key(b, cell): cell for cell in b.get("cells") or []}
    metrics = declared_metrics(a, b)
    entries: list[dict[str, Any]] = []
    for key, cell_a in cells_a.items():
        cell_b = cells_b.get(key)
        if cell_b is None:
            continue
        for metric in metrics:
            name, better = str(metric["name"]), metric.get("better")
            values_a, values_b = metric_values(cell_a, name), metric_values(cell_b, name)
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


def _describe(label: str, doc: Mapping[str, Any]) -> Text:
    host = doc.get("host") or {}
    git = doc.get("git") or {}
    commit = str(git.get("commit") or "no commit")[:10] + (" dirty" if git.get("dirty") else "")
    return Text(
        f"{label}  {doc.get('run_id')} · {doc.get('suite')} · {doc.get('status')} · git {commit}"
        f" · host {host.get('hostname')} ({host.get('cpu_model')}, "
        f"{host.get('logical_cpus')} CPUs)"
    )


def _warnings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    found = []
    if a.get("suite") != b.get("suite"):
        found.append(f"the runs are of different suites ({a.get('suite')}, {b.get('suite')})")
    host_a, host_b = a.get("host") or {}, b.get("host") or {}
    differing = [
        key
        for key in ("hostname", "cpu_model", "logical_cpus", "governor", "smt", "turbo")
        if host_a.get(key) != host_b.get(key)
    ]
    if differing:
        found.append(f"the hosts differ in {', '.join(differing)}: part of any change is the host")
    config_a, config_b = a.get("config") or {}, b.get("config") or {}
    for key in ("duration_s", "warmup_s"):
        if config_a.get(key) != config_b.get(key):
            found.append(f"{key} differs: {config_a.get(key)} in A, {config_b.get(key)} in B")
    return found


def comparison_table(
    entries: Sequence[Mapping[str, Any]], units: Mapping[str, str], layout: Layout
) -> Table:
    """Rows are (cell, metric); a rule separates cells. Narrow tables fold p into B/A."""
    scenarios = {str(e["scenario"]) for e in entries}
    param_names = dict.fromkeys(name for e in entries for name in e["params"])
    params = [
        name
        for name in param_names
        if len({params_key({"v": e["params"].get(name)}) for e in entries}) > 1
    ]
    table = new_table(None, layout)
    wide = layout == "wide"
    table.add_column("strategy", no_wrap=True, overflow="fold")
    if len(scenarios) > 1:
        table.add_column("scenario", no_wrap=True, overflow="fold")
    for name in params:
        table.add_column(name, justify="right", no_wrap=True, overflow="fold")
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
        row: list[Text | str] = [str(entry["strategy"])]
        if len(scenarios) > 1:
            row.append(str(entry["scenario"]))
        row += [param_text(entry["params"].get(param)) for param in params]
        row += [name, figure(entry["a"], time_ns, layout), figure(entry["b"], time_ns, layout)]
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


def render(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]],
    console: Console,
) -> None:
    console.print(_describe("A", a))
    console.print(_describe("B", b))
    for note in _warnings(a, b):
        console.print(Text(f"warning: {note}", style="yellow"))
    matched = [e for e in entries if e["metric"] is not None]
    units = {str(m["name"]): str(m.get("unit", "")) for m in declared_metrics(a, b)}
    if matched:
        console.print(
            fitting_table(lambda layout: comparison_table(matched, units, layout), console)
        )
    else:
        console.print("no cell appears in both runs")
    for entry in entries:
        if entry["metric"] is None:
            params = " ".join(f"{k}={param_text(v)}" for k, v in entry["params"].items())
            console.print(
                f"{entry['verdict']}: {entry['strategy']} · {entry['scenario']}"
                + (f" · {params}" if params else "")
            )
    for line in notes(matched, strategy_key="strategy"):
        console.print(Text(line, style="yellow"))
    console.print(
        Text(
            "A, B: median of the repeats [95% interval of the median]; B/A: ratio of medians "
            "[95% bootstrap interval]; p: Mann-Whitney U, two-sided; * and verdict: p < 0.05, "
            "better or worse by the metric's direction; inconclusive: too few repeats for "
            "p < 0.05 to be possible",
            style="dim",
        )
    )


def compare_command(run_a: Path, run_b: Path, console: Console, as_json: bool) -> int:
    """Exit 0 after comparing; 2 when either path is not a readable run."""
    try:
        a = jsonfile.as_json(jsonfile.load_run(run_a))
        b = jsonfile.as_json(jsonfile.load_run(run_b))
    except jsonfile.RunLoadError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    entries = compare_runs(a, b)
    graphs, missing = diff_runs(a, run_dir(run_a), b, run_dir(run_b), cell_key)
    if as_json:
        console.out(json.dumps(entries, indent=2), highlight=False)
    else:
        render(a, b, entries, console)
    out = Console(stderr=True) if as_json else console
    for graph in graphs:
        out.print(f"differential flame graph (A -> B): {graph}", highlight=False)
    for line in missing:
        out.print(f"[dim]no differential graph for {line}[/]", highlight=False)
    return 0


def run_dir(path: Path) -> Path:
    return path if path.is_dir() else path.parent
