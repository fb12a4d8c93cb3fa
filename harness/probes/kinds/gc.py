"""`gc`: Go GC cycles and stop-the-world pauses per process, from the libbpf collector
bpf/build/gc (entry-only uprobes on the Go runtime; bpf/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.probes import availability, terminal
from harness.probes.collector import CollectorProbe
from harness.probes.kind import Data, DriverOptions, ProbeKind, ProbeMetric, RepeatContext
from harness.probes.log2 import hist_quantile
from harness.probes.probe import Probe, ProbeSpec

NAME = "gc"
METRICS = (
    ProbeMetric("gc_cycles", "cycles", 70),
    ProbeMetric("gc_pause_ns.total", "ns", 80, column="GC pause"),
    ProbeMetric("gc_pause_ns.max", "ns", 90),
)


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return CollectorProbe(spec, out_path, options.now)


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """The client's GC cycles started and its GC stop-the-world pauses over the window
    (count, total, max, p99 from the log2 histogram); not divided by ops."""
    if context.ops is None:
        return {}
    for process in data.get("processes") or []:
        if process.get("pid") != context.client:
            continue
        p99 = hist_quantile(process.get("gc_stw_hist_log2_ns") or [], 0.99)
        return {
            "gc_cycles": process.get("cycles", 0),
            "gc_pause_ns": {
                "count": process.get("gc_stw_pauses", 0),
                "total": process.get("gc_stw_total_ns", 0),
                "max": process.get("gc_stw_max_ns", 0),
                "p99": p99 if p99 is not None else 0,
            },
        }
    return {}


def _pauses(fields: Data, prefix: str) -> str:
    """`3 (1.2ms, max 0.6ms)`: count, total and longest of one kind of pause."""
    count = fields.get(f"{prefix}_pauses", 0)
    total = terminal.ns(fields.get(f"{prefix}_total_ns", 0))
    return (
        f"{terminal.exact(count)} ({total}, max {terminal.ns(fields.get(f'{prefix}_max_ns', 0))})"
    )


def section(name: str, data: Data, console: Console) -> None:
    """Per Go process: cycles, GC pauses and other stops (exact counts, to compare with the
    runtime's own); the stops by the runtime's reason."""
    ns, count = terminal.ns, terminal.exact
    table = terminal.table(
        "gc: Go processes",
        ["pid", "comm", "go", "GC cycles", "GC pauses (total, max)", "other stops (total, max)"],
    )
    for p in data.get("processes") or []:
        table.add_row(
            str(p.get("pid")),
            str(p.get("comm")),
            str(p.get("go_version")),
            count(p.get("cycles", 0)),
            _pauses(p, "gc_stw"),
            _pauses(p, "other_stw"),
        )
    console.print(table)
    reasons = [
        (p.get("pid"), r) for p in data.get("processes") or [] for r in p.get("by_reason") or []
    ]
    if reasons:
        table = terminal.table(
            "gc: stop-the-world pauses by reason", ["pid", "reason", "pauses", "total", "max"]
        )
        ranked = sorted(reasons, key=lambda pr: pr[1].get("total_ns", 0), reverse=True)
        for pid, r in ranked[: terminal.TOP]:
            table.add_row(
                str(pid),
                str(r.get("reason")),
                count(r.get("pauses", 0)),
                ns(r.get("total_ns", 0)),
                ns(r.get("max_ns", 0)),
            )
        console.print(table)
    totals = data.get("totals") or {}
    console.print(
        f"gc totals: {count(totals.get('cycles', 0))} cycles, GC pauses "
        f"{_pauses(totals, 'gc_stw')}, other stops {_pauses(totals, 'other_stw')}; "
        f"lost events {data.get('lost_events', 0)}"
    )


KIND = ProbeKind(
    name=NAME,
    collector=True,
    driver=driver,
    check=lambda root: availability.collector_check(NAME, root),
    section=section,
    metrics=METRICS,
    derive=derive,
)
