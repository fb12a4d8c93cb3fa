"""Which metrics a run's tables show, in which order, and under which label.

A label is the workload's when its describe gives one (`"label": "wait avg"`), else the
harness's own for the shared metrics and the probes' figures, else the metric's name. The
probes' columns and labels are their kinds' (probes/registry.py), passed in by the callers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from harness.format.names import printable

# The headline columns, as in the scylla PR's summary, in this order when present; every other
# metric is in run.json and in `harness compare`.
LEADING_METRICS = ("ops_per_sec", "latency_ns.p50", "latency_ns.p99")
TRAILING_METRICS = ("timeouts", "errors")
# CPU time per operation per role, read by the workload itself over the measured window (the
# workload contract's convention), right after the headline columns.
CPU_METRICS = {
    "client_cpu_ns_per_op": "client CPU/op",
    "server_cpu_ns_per_op": "server CPU/op",
    "cpu_ns_per_op": "CPU/op",
}
# The unit of a fraction of a whole, written as a percentage (the probes' mutex_share).
SHARE_UNIT = "share"
# Column headings of the terminal tables (and the probes' columns, after CPU per op).
TABLE_LABELS = {
    "ops_per_sec": "ops/s",
    "latency_ns.p50": "p50",
    "latency_ns.p99": "p99",
    "latency_ns.p999": "p99.9",
    **CPU_METRICS,
}
# The reports have room for more figures, and longer headings for some (the probes' labels).
REPORT_LABELS = {
    **TABLE_LABELS,
    "latency_ns.p90": "p90",
    "latency_ns.max": "max latency",
    "latency_ns.mean": "mean latency",
}


def declared_labels(doc: Mapping[str, Any]) -> dict[str, str]:
    """The labels the run's declared metrics carry (from the workload's describe)."""
    return {str(m["name"]): str(m["label"]) for m in doc.get("metrics") or [] if m.get("label")}


def table_labels(doc: Mapping[str, Any], probe_columns: Mapping[str, str]) -> dict[str, str]:
    """The terminal tables' headings; `probe_columns`: the probes' (registry.columns())."""
    return {**TABLE_LABELS, **probe_columns, **declared_labels(doc)}


def report_labels(doc: Mapping[str, Any], probe_labels: Mapping[str, str]) -> dict[str, str]:
    """The reports' headings; `probe_labels`: the probes' (registry.labels())."""
    return {**REPORT_LABELS, **probe_labels, **declared_labels(doc)}


def headline_metrics(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The metrics the workload's describe marks `"headline": true` (the pools suite's wait
    times, as in its source's tables), else ops/s, p50 and p99."""
    marked = [str(m["name"]) for m in doc.get("metrics") or [] if m.get("headline")]
    return tuple(marked) or LEADING_METRICS


def report_columns(
    doc: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], probe_metrics: Iterable[str]
) -> tuple[list[str], list[str]]:
    """The reports' (metric columns, declared metrics no cell reported).

    The run's declared metrics in their order, then the probe and profile figures
    (`probe_metrics`, in their order) present in some cell's summary. A run.json without
    declared metrics gets the terminal table's.
    """
    # Here: cells sums with numpy, and the probes' registry reads SHARE_UNIT from this
    # module as `harness run --help` builds its parser.
    from harness.format.cells import cell_summary

    present = {name for cell in cells for name in cell_summary(cell)}
    declared = [str(m["name"]) for m in doc.get("metrics") or []]
    if not declared:
        declared = [
            n for n in (*LEADING_METRICS, *TRAILING_METRICS) if n in present or n == "ops_per_sec"
        ]
    shown = [n for n in declared if n in present]
    shown += [n for n in probe_metrics if n in present and n not in shown]
    return shown, [n for n in declared if n not in present]


def metric_columns(
    summaries: Sequence[Mapping[str, Any]], leading: Sequence[str], probe_columns: Iterable[str]
) -> list[str]:
    """The columns present in some summary: the leading ones, CPU per op, the probes' figures
    (`probe_columns`, in their order) and the window totals of every run."""
    present = {name for summary in summaries for name in summary}
    ordered = dict.fromkeys((*leading, *CPU_METRICS, *probe_columns, *TRAILING_METRICS))
    return [name for name in ordered if name in present]


# Units of figures that do not grow with the measured window: ratios, shares, times, sizes.
NOT_TOTAL_UNITS = frozenset({"x", SHARE_UNIT, "ns", "bytes", "B"})


def is_window_total(name: str, unit: str) -> bool:
    """A count summed over the measured window (tokens, requests, cycles): its size is the
    window's length as much as the strategy's, so it must not pass for a rate."""
    per = "_per_" in name or name.endswith("_per_sec")
    return bool(unit) and "/" not in unit and unit not in NOT_TOTAL_UNITS and not per


def heading(name: str, labels: Mapping[str, str], units: Mapping[str, str]) -> str:
    """A column's heading: its label, and under it "(window total)" for a window total."""
    label = printable(labels.get(name, name))
    return f"{label}\n(window total)" if is_window_total(name, units.get(name, "")) else label


def fitted_candidates(
    columns: Sequence[str],
    headline: Sequence[str],
    units: Mapping[str, str],
    probe_columns: Collection[str],
) -> list[str]:
    """The columns the default table tries, in the table's order: the headline metrics, CPU
    per op and the probes' figures (`probe_columns`); other window totals (timeouts, errors)
    only in --wide."""
    return [
        name
        for name in columns
        if name in headline
        or (
            (name in CPU_METRICS or name in probe_columns)
            and not is_window_total(name, units.get(name, ""))
        )
    ]


def ratio_metric(doc: Mapping[str, Any], columns: Sequence[str]) -> str | None:
    """The metric compared with the baseline: the first headline one, else ops/s, else the
    first declared."""
    marked = [str(m["name"]) for m in doc.get("metrics") or [] if m.get("headline")]
    if marked:
        return marked[0]
    declared = [str(m["name"]) for m in doc.get("metrics") or []]
    if "ops_per_sec" in declared or (not declared and "ops_per_sec" in columns):
        return "ops_per_sec"
    return declared[0] if declared else None
