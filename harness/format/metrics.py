"""Which metrics a run's tables show, in which order, and under which label.

A label is the workload's when its describe gives one (`"label": "wait avg"`), else the
harness's own for the shared metrics and the probes' figures, else the metric's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.format.names import printable
from harness.probes import registry

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
# Per-op figures from the probes (their kinds' metrics), between the two when present.
PROBE_METRICS = tuple(registry.columns())
PERCENT_METRICS = frozenset(m.name for m in registry.metrics() if m.unit == "share")  # as %
# Column headings of the terminal tables.
TABLE_LABELS = {
    "ops_per_sec": "ops/s",
    "latency_ns.p50": "p50",
    "latency_ns.p99": "p99",
    "latency_ns.p999": "p99.9",
    **CPU_METRICS,
    **registry.columns(),
}
# The reports have room for more figures, and longer headings for some.
REPORT_LABELS = {
    **TABLE_LABELS,
    "latency_ns.p90": "p90",
    "latency_ns.max": "max latency",
    "latency_ns.mean": "mean latency",
    **registry.labels(),
}


def declared_labels(doc: Mapping[str, Any]) -> dict[str, str]:
    """The labels the run's declared metrics carry (from the workload's describe)."""
    return {str(m["name"]): str(m["label"]) for m in doc.get("metrics") or [] if m.get("label")}


def table_labels(doc: Mapping[str, Any]) -> dict[str, str]:
    return {**TABLE_LABELS, **declared_labels(doc)}


def report_labels(doc: Mapping[str, Any]) -> dict[str, str]:
    return {**REPORT_LABELS, **declared_labels(doc)}


def headline_metrics(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The metrics the workload's describe marks `"headline": true` (the pools suite's wait
    times, as in its source's tables), else ops/s, p50 and p99."""
    marked = [str(m["name"]) for m in doc.get("metrics") or [] if m.get("headline")]
    return tuple(marked) or LEADING_METRICS


def metric_columns(
    summaries: Sequence[Mapping[str, Any]], leading: Sequence[str] = LEADING_METRICS
) -> list[str]:
    present = {name for summary in summaries for name in summary}
    ordered = dict.fromkeys((*leading, *CPU_METRICS, *PROBE_METRICS, *TRAILING_METRICS))
    return [name for name in ordered if name in present]


# Units of figures that do not grow with the measured window: ratios, shares, times, sizes.
NOT_TOTAL_UNITS = frozenset({"x", "share", "ns", "bytes", "B"})


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
    columns: Sequence[str], headline: Sequence[str], units: Mapping[str, str]
) -> list[str]:
    """The columns the default table tries, in the table's order: the headline metrics, CPU
    per op and the probes' figures; other window totals (timeouts, errors) only in --wide."""
    return [
        name
        for name in columns
        if name in headline
        or (
            (name in CPU_METRICS or name in PROBE_METRICS)
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
