"""`jvmgc`: HotSpot GC cycles and stop-the-world pauses of the client JVM, from libjvm's USDT
probes (gc__begin/gc__end, safepoint__begin/end) through bpf/jvmgc.bt.in; the same shape
as the Go `gc` probe (driver: probes/jvmgc.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.checks import PRIVILEGE_FIX, Check
from harness.probes import availability, terminal
from harness.probes.jvmgc import JvmGcProbe
from harness.probes.kind import Data, DriverOptions, ProbeKind, ProbeMetric, RepeatContext
from harness.probes.log2 import hist_quantile
from harness.probes.probe import Probe, ProbeSpec

NAME = "jvmgc"
METRICS = (
    ProbeMetric("jvm_gc_cycles", "cycles", 71),
    ProbeMetric("jvm_gc_pause_ns.total", "ns", 81, column="JVM GC pause"),
    ProbeMetric("jvm_gc_pause_ns.max", "ns", 91),
    ProbeMetric("jvm_gc_time_ns", "ns", 92),
)
RECORDED_KEYS = ("script", "totals", "notes")  # run.json keeps these; the raw file all


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return JvmGcProbe(spec, out_path)


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """The client JVM's GC cycles and GC pauses over the window (count, total, max, p99):
    a pause is the whole safepoint the GC ran in, the time to reach it included, as the
    application sees it; jvm_gc_time_ns is the GC's own time (gc__begin to gc__end), what
    the JVM's GarbageCollectorMXBeans and -Xlog:gc report."""
    if context.ops is None:
        return {}
    for process in data.get("processes") or []:
        if process.get("pid") != context.client:
            continue
        p99 = hist_quantile(process.get("gc_stw_hist_log2_ns") or [], 0.99)
        return {
            "jvm_gc_cycles": process.get("cycles", 0),
            "jvm_gc_time_ns": process.get("gc_ns_total", 0),
            "jvm_gc_pause_ns": {
                "count": process.get("gc_stw_pauses", 0),
                "total": process.get("gc_stw_total_ns", 0),
                "max": process.get("gc_stw_max_ns", 0),
                "p99": p99 if p99 is not None else 0,
            },
        }
    return {}


def recorded(data: Data, ops: float | None) -> dict[str, Any]:
    return {key: data[key] for key in RECORDED_KEYS if key in data}


def check(root: Path) -> Check:
    """Whether bpftrace can attach to a JVM's USDT probes here (and which libjvm has them)."""
    problem = availability.bpftrace_problem(root)
    if problem is not None:
        fix = "apt install bpftrace" if "not installed" in problem else PRIVILEGE_FIX
        return Check(f"probe {NAME}", "missing", problem, fix)
    return Check(
        f"probe {NAME}",
        "ok",
        "works: bpftrace present, BPF allowed (the JVM's USDT probes: see `jvm usdt`)",
    )


def section(name: str, data: Data, console: Console) -> None:
    ns, count = terminal.ns, terminal.exact
    table = terminal.table(
        "jvmgc: JVMs",
        ["pid", "GC cycles (full)", "GC pauses (total, max)", "other stops (total, max)"],
    )
    for p in data.get("processes") or []:
        table.add_row(
            str(p.get("pid")),
            f"{count(p.get('cycles', 0))} ({count(p.get('full_cycles', 0))})",
            f"{count(p.get('gc_stw_pauses', 0))} ({ns(p.get('gc_stw_total_ns', 0))}, "
            f"max {ns(p.get('gc_stw_max_ns', 0))})",
            f"{count(p.get('other_stw_pauses', 0))} ({ns(p.get('other_stw_total_ns', 0))}, "
            f"max {ns(p.get('other_stw_max_ns', 0))})",
        )
    console.print(table)


KIND = ProbeKind(
    name=NAME,
    driver=driver,
    check=check,
    section=section,
    metrics=METRICS,
    derive=derive,
    recorded=recorded,
)
