"""`gc`: GC cycles and stop-the-world pauses of whatever runtime the measured processes run:
Go programs through the libbpf collector bpf/build/gc (entry-only uprobes on the Go runtime;
bpf/README.md), a JVM through HotSpot's USDT probes (bpf/jvmgc.bt.in with bpftrace). Both
give the same per-process shape (driver: probes/drivers/gc.py). `jvmgc` is an alias (spec.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.checks import PRIVILEGE_FIX, Check
from harness.probes import availability, terminal
from harness.probes.drivers.gc import GcProbe
from harness.probes.kind import Data, DriverOptions, ProbeMetric, RepeatContext, declare
from harness.probes.log2 import hist_quantile
from harness.probes.probe import Probe, ProbeSpec

NAME = "gc"
METRICS = (
    ProbeMetric("gc_cycles", "cycles", 70),
    ProbeMetric("gc_pause_ns.total", "ns", 80, column="GC pause"),
    ProbeMetric("gc_pause_ns.max", "ns", 90),
    ProbeMetric("jvm_gc_time_ns", "ns", 92),
    # The names of the JVM's figures before `gc` covered the JVM (the `jvmgc` probe): not
    # recorded any more, only declared by those runs; their tables and reports still show them.
    ProbeMetric("jvm_gc_cycles", "cycles", 71, declared=False),
    ProbeMetric("jvm_gc_pause_ns.total", "ns", 81, column="JVM GC pause", declared=False),
    ProbeMetric("jvm_gc_pause_ns.max", "ns", 91, declared=False),
)
# What run.json keeps of a repeat: the collector's window, losses and totals (Go), the
# script and its notes (JVM); the raw file has everything.
RECORDED_KEYS = ("window_ns", "lost_events", "totals", "script", "notes")
PAUSE_COLUMNS = ("GC cycles", "GC pauses (total, max)", "other stops (total, max)")


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return GcProbe(spec, out_path, options.now)


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """The client's GC cycles and GC stop-the-world pauses over the window (count, total,
    max, p99 from the log2 histogram); not divided by ops. Go: cycles started, pauses as the
    runtime times them. JVM: GCs that ended; a pause is the whole safepoint the GC ran in,
    the time to reach it included, as the application sees it; jvm_gc_time_ns is the GC's own
    time (gc__begin to gc__end), what the JVM's GarbageCollectorMXBeans and -Xlog:gc report."""
    if context.ops is None:
        return {}
    for process in data.get("processes") or []:
        if process.get("pid") != context.client:
            continue
        p99 = hist_quantile(process.get("gc_stw_hist_log2_ns") or [], 0.99)
        metrics = {
            "gc_cycles": process.get("cycles", 0),
            "gc_pause_ns": {
                "count": process.get("gc_stw_pauses", 0),
                "total": process.get("gc_stw_total_ns", 0),
                "max": process.get("gc_stw_max_ns", 0),
                "p99": p99 if p99 is not None else 0,
            },
        }
        if process.get("runtime") == "jvm":
            metrics["jvm_gc_time_ns"] = process.get("gc_ns_total", 0)
        return metrics
    return {}


def recorded(data: Data, ops: float | None) -> dict[str, Any]:
    return {key: data[key] for key in RECORDED_KEYS if key in data}


def check(root: Path) -> Check:
    """`harness doctor`'s line: Go programs need the collector (built, BPF allowed, BTF),
    JVMs bpftrace; either alone is a warning."""
    go = availability.collector_check(NAME, root)
    jvm = availability.bpftrace_problem(root)
    jvm_fix = "apt install bpftrace" if jvm and "not installed" in jvm else PRIVILEGE_FIX
    if go.status == "ok" and jvm is None:
        return Check(
            f"probe {NAME}",
            "ok",
            f"works: Go programs ({go.detail.removeprefix('works: ')}) and JVMs (bpftrace "
            "present; their USDT probes: see `jvm usdt`)",
        )
    if go.status == "ok":
        return Check(f"probe {NAME}", "warn", f"Go programs only; JVMs: {jvm}", jvm_fix)
    if jvm is None:
        return Check(f"probe {NAME}", "warn", f"JVMs only; Go programs: {go.detail}", go.fix)
    return Check(f"probe {NAME}", "missing", f"Go programs: {go.detail}; JVMs: {jvm}", go.fix)


def _pauses(fields: Data, prefix: str) -> str:
    """`3 (1.2ms, max 0.6ms)`: count, total and longest of one kind of pause."""
    count = fields.get(f"{prefix}_pauses", 0)
    total = terminal.ns(fields.get(f"{prefix}_total_ns", 0))
    return (
        f"{terminal.exact(count)} ({total}, max {terminal.ns(fields.get(f'{prefix}_max_ns', 0))})"
    )


def section(name: str, data: Data, console: Console) -> None:
    """Per Go process: cycles, GC pauses and other stops (exact counts, to compare with the
    runtime's own), the stops by the runtime's reason; per JVM: cycles (full ones), GC pauses
    and other safepoints; the totals over both."""
    count = terminal.exact
    processes = data.get("processes") or []
    go = [p for p in processes if p.get("runtime") == "go"]
    jvms = [p for p in processes if p.get("runtime") == "jvm"]
    if go:
        table = terminal.table("gc: Go processes", ["pid", "comm", "go", *PAUSE_COLUMNS])
        for p in go:
            table.add_row(
                str(p.get("pid")),
                str(p.get("comm")),
                str(p.get("go_version")),
                count(p.get("cycles", 0)),
                _pauses(p, "gc_stw"),
                _pauses(p, "other_stw"),
            )
        console.print(table)
        _reasons(go, console)
    if jvms:
        table = terminal.table("gc: JVMs", ["pid", *PAUSE_COLUMNS])
        for p in jvms:
            table.add_row(
                str(p.get("pid")),
                f"{count(p.get('cycles', 0))} ({count(p.get('full_cycles', 0))} full)",
                _pauses(p, "gc_stw"),
                _pauses(p, "other_stw"),
            )
        console.print(table)
    totals = data.get("totals") or {}
    lost = f"; lost events {data['lost_events']}" if "lost_events" in data else ""
    console.print(
        f"gc totals: {count(totals.get('cycles', 0))} cycles, GC pauses "
        f"{_pauses(totals, 'gc_stw')}, other stops {_pauses(totals, 'other_stw')}{lost}"
    )
    for note in data.get("notes") or []:
        console.print(f"  note: {note}", style="yellow")


def _reasons(processes: list[Data], console: Console) -> None:
    """The Go runtime's stop-the-world pauses by its reason, the longest first."""
    reasons = [(p.get("pid"), r) for p in processes for r in p.get("by_reason") or []]
    if not reasons:
        return
    table = terminal.table(
        "gc: stop-the-world pauses by reason", ["pid", "reason", "pauses", "total", "max"]
    )
    ranked = sorted(reasons, key=lambda pr: pr[1].get("total_ns", 0), reverse=True)
    for pid, r in ranked[: terminal.TOP]:
        table.add_row(
            str(pid),
            str(r.get("reason")),
            terminal.exact(r.get("pauses", 0)),
            terminal.ns(r.get("total_ns", 0)),
            terminal.ns(r.get("max_ns", 0)),
        )
    console.print(table)


KIND = declare(__name__, collector=True)
