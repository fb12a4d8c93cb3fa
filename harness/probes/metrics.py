"""Per-op metrics of one repeat, from the probes' output over its measured window.

The op count is the result's `ok` (requests answered in time) if present, else `issued`,
else `ops`; without one, no per-op metric is derived. Only the measured client counts: the
first pid of the ready event (its threads in `sched`, its process in `futex`):

- ctx_switches_per_op: (voluntary + involuntary switches of the client's threads) / ops
- voluntary_switches_per_op: voluntary switches (the thread blocked) / ops
- wakeups_per_op: wake-ups received by the client's threads / ops
- offcpu_ns_per_op: off-CPU time summed over the client's threads / ops
- runq_latency_ns {p50, p99}: run-queue latency of the client's threads, from their log2
  histograms added up (see hist_quantile)
- futex_waits_per_op: successful futex waits of the client (all waiting ops) / ops
- futex_wait_ns_per_op: time in those waits / ops
- gc_pause_ns {count, total, max, p99}: the client's GC stop-the-world pauses over the window
  (the `gc` probe; p99 from its log2 histogram), and gc_cycles: GC cycles started
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

OP_COUNT_KEYS = ("ok", "issued", "ops")
# What the probes add to a repeat's metrics, declared as describe declares a suite's (for the
# comparisons against the baseline and between runs); lower is better for all of them.
PROBE_METRICS: tuple[dict[str, str], ...] = (
    {"name": "ctx_switches_per_op", "unit": "switches", "better": "lower"},
    {"name": "wakeups_per_op", "unit": "wake-ups", "better": "lower"},
    {"name": "futex_wait_ns_per_op", "unit": "ns", "better": "lower"},
    {"name": "offcpu_ns_per_op", "unit": "ns", "better": "lower"},
    {"name": "runq_latency_ns.p99", "unit": "ns", "better": "lower"},
    {"name": "mutex_share", "unit": "share", "better": "lower"},
    {"name": "gc_cycles", "unit": "cycles", "better": "lower"},
    {"name": "gc_pause_ns.total", "unit": "ns", "better": "lower"},
    {"name": "gc_pause_ns.max", "unit": "ns", "better": "lower"},
)
QUANTILES = {"p50": 0.50, "p99": 0.99}


def op_count(result: Mapping[str, Any]) -> float | None:
    for key in OP_COUNT_KEYS:
        value = result.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if value > 0 else None
    return None


def bucket_bounds(slot: int) -> tuple[float, float]:
    """Slot i of the collectors' log2 histograms holds [2^i, 2^(i+1)) ns; slot 0 [0, 2)."""
    return (0.0 if slot == 0 else float(2**slot)), float(2 ** (slot + 1))


def hist_quantile(hist: Sequence[int], q: float) -> float | None:
    """The q-quantile of a log2 histogram, interpolated linearly inside its bucket.

    The rank q*N falls in the bucket where the running count reaches it; the value is that
    bucket's lower bound plus the same fraction of its width as the rank's position among the
    bucket's counts (values assumed spread evenly in the bucket). The last slot, which also
    holds everything longer, is treated as [2^i, 2^(i+1)) too. None for an empty histogram.
    """
    total = sum(hist)
    if total <= 0:
        return None
    rank = q * total
    below = 0
    for slot, count in enumerate(hist):
        if count and below + count >= rank:
            low, high = bucket_bounds(slot)
            return low + (high - low) * max(0.0, rank - below) / count
        below += count
    return None  # unreachable: the running count reaches total


def add_hists(hists: Sequence[Sequence[int]]) -> list[int]:
    out = [0] * max((len(h) for h in hists), default=0)
    for hist in hists:
        for slot, count in enumerate(hist):
            out[slot] += count
    return out


def sched_metrics(data: Mapping[str, Any], client: int, ops: float) -> dict[str, Any]:
    threads = [t for t in data.get("threads") or [] if t.get("pid") == client]
    voluntary = sum(t.get("voluntary_switches", 0) for t in threads)
    involuntary = sum(t.get("involuntary_switches", 0) for t in threads)
    metrics: dict[str, Any] = {
        "ctx_switches_per_op": (voluntary + involuntary) / ops,
        "voluntary_switches_per_op": voluntary / ops,
        "wakeups_per_op": sum(t.get("wakeups_received", 0) for t in threads) / ops,
        "offcpu_ns_per_op": sum(t.get("offcpu_ns", 0) for t in threads) / ops,
    }
    runq = add_hists([t.get("runq_hist_log2_ns") or [] for t in threads])
    quantiles = {name: hist_quantile(runq, q) for name, q in QUANTILES.items()}
    if all(v is not None for v in quantiles.values()):
        metrics["runq_latency_ns"] = quantiles
    return metrics


def futex_metrics(data: Mapping[str, Any], client: int) -> tuple[float, float]:
    """(waits, wait ns) of the client process over every waiting operation."""
    waits = wait_ns = 0.0
    for process in data.get("processes") or []:
        if process.get("pid") != client:
            continue
        for op in (process.get("ops") or {}).values():
            waits += op.get("count", 0)
            wait_ns += op.get("total_ns", 0)
    return waits, wait_ns


def gc_metrics(data: Mapping[str, Any], client: int) -> dict[str, Any]:
    for process in data.get("processes") or []:
        if process.get("pid") != client:
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


def per_op_metrics(
    result: Mapping[str, Any], outputs: Mapping[str, Mapping[str, Any]], client: int
) -> dict[str, Any]:
    """The metrics above from the `sched` and `futex` outputs present; {} without ops."""
    ops = op_count(result)
    if ops is None:
        return {}
    metrics: dict[str, Any] = {}
    if "sched" in outputs:
        metrics |= sched_metrics(outputs["sched"], client, ops)
    if "futex" in outputs:
        waits, wait_ns = futex_metrics(outputs["futex"], client)
        metrics["futex_waits_per_op"] = waits / ops
        metrics["futex_wait_ns_per_op"] = wait_ns / ops
    if "gc" in outputs:
        metrics |= gc_metrics(outputs["gc"], client)
    return metrics


def numbers_per_op(diff: Mapping[str, Any], ops: float) -> dict[str, Any]:
    """A bpftrace window difference divided by ops: plain and keyed numbers (not histograms)."""
    out: dict[str, Any] = {}
    for name, value in diff.items():
        if isinstance(value, int | float):
            out[name] = value / ops
        elif isinstance(value, Mapping) and all(isinstance(v, int | float) for v in value.values()):
            out[name] = {key: v / ops for key, v in value.items()}
    return out
