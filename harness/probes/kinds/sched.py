"""`sched`: context switches, off-CPU time, run-queue latency and wake-ups per thread, from
the libbpf collector bpf/build/sched (bpf/README.md).

On the measurement repeats the collector runs `--counters-only` (`"mode": "counters"`): no
program on sched_switch; the switches, off-CPU and run-queue time per thread are the kernel's
counters read at the window's edges, the histograms are empty. The explain repeats run it in
full, with the run-queue histograms."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.format.numbers import human
from harness.probes import terminal
from harness.probes.drivers.collector import CollectorProbe
from harness.probes.kind import (
    Data,
    DriverOptions,
    ProbeMetric,
    RepeatContext,
    declare,
    totals_report,
)
from harness.probes.log2 import add_hists, hist_quantile
from harness.probes.probe import Probe, ProbeSpec
from harness.profiles.graphs import FlameGraph
from harness.profiles.stacks import Stacks

NAME = "sched"
QUANTILES = {"p50": 0.50, "p99": 0.99}
GRAPHS = (
    FlameGraph(
        NAME,
        "wakeups",
        "wake-up",
        "wakeup_svg",
        "wakeup_folded",
        ("wake",),
        rank=30,
        note_rank=40,
        missing="no wake-up view",
    ),
)
METRICS = (
    ProbeMetric("ctx_switches_per_op", "switches", 10, column="ctx sw/op"),
    ProbeMetric("wakeups_per_op", "wake-ups", 20, column="wakeups/op"),
    ProbeMetric("offcpu_ns_per_op", "ns", 40, column="off-CPU/op"),
    ProbeMetric("runq_ns_per_op", "ns", 42, column="runq/op"),
    ProbeMetric("runq_latency_ns.p50", "ns", 45, label="run-queue p50", declared=False),
    ProbeMetric("runq_latency_ns.p99", "ns", 50, label="run-queue p99"),
)


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return CollectorProbe(spec, out_path, options.now, options.args)


def counters_only(data: Data) -> bool:
    """Output of `--counters-only`: totals per thread, no histograms."""
    return data.get("mode") == "counters"


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """Of the client's threads: switches (all, voluntary: the thread blocked), wake-ups
    received, off-CPU and run-queue time per op; run-queue latency quantiles of their
    histograms (the full mode's: the explain repeats')."""
    if context.ops is None:
        return {}
    ops = context.ops
    threads = [t for t in data.get("threads") or [] if t.get("pid") == context.client]
    voluntary = sum(t.get("voluntary_switches", 0) for t in threads)
    involuntary = sum(t.get("involuntary_switches", 0) for t in threads)
    metrics: dict[str, Any] = {
        "ctx_switches_per_op": (voluntary + involuntary) / ops,
        "voluntary_switches_per_op": voluntary / ops,
        "wakeups_per_op": sum(t.get("wakeups_received", 0) for t in threads) / ops,
        "offcpu_ns_per_op": sum(t.get("offcpu_ns", 0) for t in threads) / ops,
        "runq_ns_per_op": sum(t.get("runq_ns", 0) for t in threads) / ops,
    }
    runq = add_hists([t.get("runq_hist_log2_ns") or [] for t in threads])
    quantiles = {name: hist_quantile(runq, q) for name, q in QUANTILES.items()}
    if all(v is not None for v in quantiles.values()):
        metrics["runq_latency_ns"] = quantiles
    return metrics


def _task(pair: Mapping[str, Any], role: str) -> str:
    """`comm (pid/tid)` of the waker or the wakee of a wake-up pair."""
    tid = pair.get(f"{role}_tid")
    where = f"{pair.get(f'{role}_pid')}/{tid}" if tid is not None else pair.get(f"{role}_pid")
    return f"{pair.get(f'{role}_comm')} ({where})"


def section(name: str, data: Data, console: Console) -> None:
    """The threads with the most switches, the top wake-up pairs, the totals. Counters only:
    run-queue time instead of its quantiles (no histograms)."""
    ns, count, top = terminal.ns, terminal.count, terminal.TOP
    counters = counters_only(data)
    threads = sorted(
        data.get("threads") or [],
        key=lambda t: t.get("voluntary_switches", 0) + t.get("involuntary_switches", 0),
        reverse=True,
    )
    runq_columns = ["run queue"] if counters else ["runq p50", "runq p99"]
    table = terminal.table(
        f"sched: top {top} threads by context switches",
        ["thread", "comm", "voluntary", "involuntary", "off-CPU", *runq_columns, "woken"],
    )
    for t in threads[:top]:
        runq = t.get("runq_hist_log2_ns") or []
        runq_cells = (
            [ns(t.get("runq_ns", 0))]
            if counters
            else [ns(hist_quantile(runq, 0.5)), ns(hist_quantile(runq, 0.99))]
        )
        table.add_row(
            f"{t.get('pid')}/{t.get('tid')}",
            str(t.get("comm")),
            count(t.get("voluntary_switches", 0)),
            count(t.get("involuntary_switches", 0)),
            ns(t.get("offcpu_ns", 0)),
            *runq_cells,
            count(t.get("wakeups_received", 0)),
        )
    console.print(table)
    pairs = sorted(data.get("wakeups") or [], key=lambda w: w.get("count", 0), reverse=True)
    table = terminal.table(
        f"sched: top {top} wake-ups (waker -> wakee)", ["waker", "wakee", "count"]
    )
    for w in pairs[:top]:
        table.add_row(_task(w, "waker"), _task(w, "wakee"), count(w.get("count", 0)))
    console.print(table)
    totals = data.get("totals") or {}
    if counters:
        runq_text = f"{ns(sum(t.get('runq_ns', 0) for t in threads))} in the run queue"
    else:
        runq = totals.get("runq_hist_log2_ns") or add_hists(
            [t.get("runq_hist_log2_ns") or [] for t in threads]
        )
        runq_text = (
            f"run-queue p50 {ns(hist_quantile(runq, 0.5))} p99 {ns(hist_quantile(runq, 0.99))}"
        )
    console.print(
        f"sched totals: {count(totals.get('voluntary_switches', 0))} voluntary, "
        f"{count(totals.get('involuntary_switches', 0))} involuntary switches, "
        f"{ns(totals.get('offcpu_ns', 0))} off-CPU, {count(totals.get('wakeups', 0))} "
        f"wake-ups, {runq_text}; lost events {data.get('lost_events', 0)}"
    )


def _totals_line(totals: Data) -> str:
    def n(key: str) -> str:
        return human(float(totals.get(key) or 0))

    return (
        f"over the repeats: {n('voluntary_switches')} voluntary and "
        f"{n('involuntary_switches')} involuntary context switches, "
        f"{human(float(totals.get('offcpu_ns') or 0), time_ns=True)} off-CPU, "
        f"{n('wakeups')} wake-ups"
    )


report = totals_report(_totals_line)


def stacks(path: Path, data: Data, into: Stacks) -> None:
    """Waker comm -> wakee comm, weighted by wake-ups: the wake-up graph."""
    for pair in data.get("wakeups") or []:
        stack = f"{pair.get('waker_comm')};{pair.get('wakee_comm')}".replace(" ", "_")
        into.wakeups[stack] += int(pair.get("count", 0))


# The measurement repeats count without tracing sched_switch (its per-switch cost took the
# measurement repeats past 1 % of the CPU); the explain repeats run it in full (histograms),
# and the cell's sched section and wake-up graph are theirs.
KIND = declare(__name__, collector=True, measurement_args=("--counters-only",))
