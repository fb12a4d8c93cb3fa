"""The readable summary of `harness probe`: where the threads waited, who woke whom, which
locks were contended, and what the bpftrace scripts counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.probes.metrics import add_hists, hist_quantile
from harness.tables import DASH, human, is_time_metric

TOP = 10
FRAMES_SHOWN = 4  # innermost frames of a folded stack


def _ns(value: float | None) -> str:
    return DASH if value is None else human(value, time_ns=True)


def _count(value: float) -> str:
    return human(value)


def _task(pair: Mapping[str, Any], role: str) -> str:
    """`comm (pid/tid)` of the waker or the wakee of a wake-up pair."""
    tid = pair.get(f"{role}_tid")
    where = f"{pair.get(f'{role}_pid')}/{tid}" if tid is not None else pair.get(f"{role}_pid")
    return f"{pair.get(f'{role}_comm')} ({where})"


def _table(title: str, columns: Sequence[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for i, name in enumerate(columns):
        table.add_column(name, justify="left" if i == 0 or name == "comm" else "right")
    return table


def sched_section(data: Mapping[str, Any], console: Console) -> None:
    threads = sorted(
        data.get("threads") or [],
        key=lambda t: t.get("voluntary_switches", 0) + t.get("involuntary_switches", 0),
        reverse=True,
    )
    table = _table(
        f"sched: top {TOP} threads by context switches",
        ["thread", "comm", "voluntary", "involuntary", "off-CPU", "runq p50", "runq p99", "woken"],
    )
    for t in threads[:TOP]:
        runq = t.get("runq_hist_log2_ns") or []
        table.add_row(
            f"{t.get('pid')}/{t.get('tid')}",
            str(t.get("comm")),
            _count(t.get("voluntary_switches", 0)),
            _count(t.get("involuntary_switches", 0)),
            _ns(t.get("offcpu_ns", 0)),
            _ns(hist_quantile(runq, 0.5)),
            _ns(hist_quantile(runq, 0.99)),
            _count(t.get("wakeups_received", 0)),
        )
    console.print(table)
    pairs = sorted(data.get("wakeups") or [], key=lambda w: w.get("count", 0), reverse=True)
    table = _table(f"sched: top {TOP} wake-ups (waker -> wakee)", ["waker", "wakee", "count"])
    for w in pairs[:TOP]:
        table.add_row(_task(w, "waker"), _task(w, "wakee"), _count(w.get("count", 0)))
    console.print(table)
    totals = data.get("totals") or {}
    runq = totals.get("runq_hist_log2_ns") or add_hists(
        [t.get("runq_hist_log2_ns") or [] for t in threads]
    )
    console.print(
        f"sched totals: {_count(totals.get('voluntary_switches', 0))} voluntary, "
        f"{_count(totals.get('involuntary_switches', 0))} involuntary switches, "
        f"{_ns(totals.get('offcpu_ns', 0))} off-CPU, {_count(totals.get('wakeups', 0))} "
        f"wake-ups, run-queue p50 {_ns(hist_quantile(runq, 0.5))} p99 "
        f"{_ns(hist_quantile(runq, 0.99))}; lost events {data.get('lost_events', 0)}"
    )


def futex_section(data: Mapping[str, Any], console: Console) -> None:
    table = _table(
        "futex: waits per process", ["pid", "comm", "waits", "wait time", "failed", "wakes"]
    )
    for p in data.get("processes") or []:
        ops = (p.get("ops") or {}).values()
        failed = sum(sum((op.get("failed") or {}).values()) for op in ops)
        table.add_row(
            str(p.get("pid")),
            str(p.get("comm")),
            _count(sum(op.get("count", 0) for op in ops)),
            _ns(sum(op.get("total_ns", 0) for op in ops)),
            _count(failed),
            _count(p.get("wake_calls", 0)),
        )
    console.print(table)
    table = _table(
        f"futex: top {TOP} contended addresses",
        ["pid", "address", "waits", "wait time", "hottest stack"],
    )
    for lock in (data.get("top") or [])[:TOP]:
        stacks = sorted(lock.get("stacks") or [], key=lambda s: s.get("wait_ns", 0), reverse=True)
        frames = str(stacks[0].get("folded", "")).split(";") if stacks else []
        table.add_row(
            str(lock.get("pid")),
            str(lock.get("uaddr")),
            _count(lock.get("waits", 0)),
            _ns(lock.get("wait_ns", 0)),
            " ← ".join(reversed(frames[-FRAMES_SHOWN:])),
        )
    console.print(table)
    totals = data.get("totals") or {}
    console.print(
        f"futex totals: {_count(totals.get('waits', 0))} waits, "
        f"{_ns(totals.get('wait_ns', 0))} waiting, {_count(totals.get('failed_waits', 0))} "
        f"failed, {_count(totals.get('wake_calls', 0))} wake calls; "
        f"lost events {data.get('lost_events', 0)}"
    )


def bpftrace_section(name: str, data: Mapping[str, Any], console: Console) -> None:
    console.print(Text(f"{name}: window difference of {data.get('script')}", style="bold"))
    for map_name, value in (data.get("diff") or {}).items():
        shown = partial(human, time_ns=is_time_metric(map_name))
        if isinstance(value, int | float):
            console.print(f"  {map_name} = {shown(value)}")
        elif isinstance(value, Mapping) and all(isinstance(v, int | float) for v in value.values()):
            console.print(f"  {map_name}: top {TOP} of {len(value)}")
            top = sorted(value.items(), key=lambda kv: kv[1], reverse=True)[:TOP]
            for key, number in top:
                console.print(f"    {shown(number):>8}  {' '.join(str(key).split())}")
        elif isinstance(value, list):
            console.print(f"  {map_name} (histogram)")
            for bucket in value:
                if bucket.get("count"):
                    bounds = f"[{bucket.get('min')}, {bucket.get('max')}]"
                    console.print(f"    {bounds:>28} {_count(bucket['count'])}")
    for note in data.get("notes") or []:
        console.print(Text(f"  note: {note}", style="yellow"))


def print_probe_report(doc: Mapping[str, Any], console: Console) -> None:
    pids = ", ".join(str(p) for p in doc.get("pids") or [])
    console.print(Text(f"probed pid {pids} for {doc.get('duration_s')} s", style="bold"))
    for name, data in (doc.get("probes") or {}).items():
        if "unavailable" in data:
            console.print(Text(f"{name}: unavailable: {data['unavailable']}", style="yellow"))
        elif "error" in data:
            console.print(Text(f"{name}: failed: {data['error']}", style="red"))
        elif name == "sched":
            sched_section(data, console)
        elif name == "futex":
            futex_section(data, console)
        else:
            bpftrace_section(name, data, console)
