"""fio's `--output-format=json+` status documents mapped onto the harness's metric names.

The wrapper takes two snapshots of fio's cumulative counters (SIGUSR1 makes fio write its
current status), at the window's start and end; the window's figures are their differences.
Latency percentiles come from the merged json+ clat `bins` of every job and direction (a
bucket's key is its mean in ns, as fio's plat_idx_to_val gives it), with fio's own rule
(calc_clat_percentiles): the first bucket whose cumulative count reaches p% of the total.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DIRECTIONS = ("read", "write", "trim")
# Reported even without IOs (zeros, no latency): describe declares their rates.
ALWAYS_REPORTED = ("read", "write")
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))
_DOCUMENT_START = '{\n  "fio version"'


class FioOutputError(Exception):
    """fio's output is not what the wrapper expects."""


@dataclass
class DirectionTotals:
    """One direction's cumulative counters, summed over jobs."""

    ios: int = 0  # completed IOs (the clat bins' total; fio's total_ios without bins)
    io_bytes: int = 0
    bins: Counter[int] = field(default_factory=Counter)


@dataclass
class Snapshot:
    """One status document: when fio wrote it and its cumulative counters."""

    timestamp_ms: int
    version: str
    directions: dict[str, DirectionTotals]
    job_errors: list[tuple[str, int]]


def split_documents(text: str) -> list[dict[str, Any]]:
    """Every JSON status document in fio's output file, in order; other lines (fio's notes,
    `fio: terminating on signal 2`) and a document cut short are skipped."""
    decoder = json.JSONDecoder()
    documents: list[dict[str, Any]] = []
    at = text.find(_DOCUMENT_START)
    while at >= 0:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            end = at + 1
        else:
            if isinstance(value, dict):
                documents.append(value)
        at = text.find(_DOCUMENT_START, end)
    return documents


def snapshot(document: Mapping[str, Any]) -> Snapshot:
    """The cumulative counters of one status document."""
    jobs = document.get("jobs")
    if not isinstance(jobs, list):
        raise FioOutputError("fio's JSON has no jobs list")
    directions = {name: DirectionTotals() for name in DIRECTIONS}
    errors: list[tuple[str, int]] = []
    for job in jobs:
        for name in DIRECTIONS:
            _add_direction(directions[name], job.get(name))
        error = job.get("error")
        if isinstance(error, int) and error != 0:
            errors.append((str(job.get("jobname", "?")), error))
    return Snapshot(
        timestamp_ms=int(document.get("timestamp_ms", 0)),
        version=str(document.get("fio version", "")),
        directions=directions,
        job_errors=errors,
    )


def _add_direction(totals: DirectionTotals, stats: object) -> None:
    if not isinstance(stats, Mapping):
        return
    totals.io_bytes += int(stats.get("io_bytes", 0))
    clat = stats.get("clat_ns")
    bins = clat.get("bins") if isinstance(clat, Mapping) else None
    if isinstance(bins, Mapping):
        for key, count in bins.items():
            totals.bins[int(key)] += int(count)
        totals.ios += sum(int(count) for count in bins.values())
    else:
        totals.ios += int(stats.get("total_ios", 0))


def difference(start: Snapshot, end: Snapshot) -> dict[str, DirectionTotals]:
    """Each direction's counters between two snapshots."""
    window: dict[str, DirectionTotals] = {}
    for name in DIRECTIONS:
        a, b = start.directions[name], end.directions[name]
        bins = Counter({k: n for k, n in (b.bins - a.bins).items() if n > 0})
        window[name] = DirectionTotals(
            ios=max(b.ios - a.ios, 0), io_bytes=max(b.io_bytes - a.io_bytes, 0), bins=bins
        )
    return window


def percentiles(bins: Mapping[int, int]) -> dict[str, float]:
    """p50..p999, max and mean in ns of a clat histogram (fio's bucket means); {} if empty."""
    total = sum(bins.values())
    if total <= 0:
        return {}
    ordered = sorted((k, n) for k, n in bins.items() if n > 0)
    figures: dict[str, float] = {}
    for name, p in PERCENTILES:
        figures[name] = float(_percentile(ordered, total, p))
    figures["max"] = float(ordered[-1][0])
    figures["mean"] = sum(k * n for k, n in ordered) / total
    return figures


def _percentile(ordered: Iterable[tuple[int, int]], total: int, p: float) -> int:
    """fio's calc_clat_percentiles: the first bucket where the running sum >= p/100 * total."""
    running = 0
    last = 0
    for key, count in ordered:
        running += count
        last = key
        if running >= p / 100.0 * total:
            return key
    return last


def direction_figures(totals: DirectionTotals, window_s: float) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "iops": totals.ios / window_s,
        "ops": totals.ios,
        "bw_bytes": totals.io_bytes / window_s,
        "io_bytes": totals.io_bytes,
    }
    latency = percentiles(totals.bins)
    if latency:
        figures["latency_ns"] = latency
    return figures


@dataclass(frozen=True)
class CpuWindow:
    """fio's CPU time over the wrapper's own window (its edges are a moment before fio's
    snapshots: the signal's delivery, fio's helper thread waking up)."""

    cpu_ns: int
    window_s: float


def window_metrics(start: Snapshot, end: Snapshot, cpu: CpuWindow | None) -> dict[str, Any]:
    """The result's metrics of the window between two snapshots: summed over directions
    (latency from the merged bins), each direction on its own (read and write always, their
    latency only with IOs; trim only with IOs), and CPU per op.

    CPU per op is a ratio of rates, CPU ns per second of the wrapper's window over IOs per
    second of fio's: the two windows differ by the snapshots' lag, which a busy machine can
    stretch, and a count of one window divided into the CPU of the other would not."""
    window_s = (end.timestamp_ms - start.timestamp_ms) / 1000.0
    if window_s <= 0:
        raise FioOutputError(f"fio's snapshots are {window_s * 1000:g} ms apart")
    window = difference(start, end)
    merged = DirectionTotals()
    for totals in window.values():
        merged.ios += totals.ios
        merged.io_bytes += totals.io_bytes
        merged.bins.update(totals.bins)
    metrics = direction_figures(merged, window_s)
    for name, totals in window.items():
        if totals.ios > 0 or name in ALWAYS_REPORTED:
            metrics[name] = direction_figures(totals, window_s)
    metrics["window_s"] = window_s
    metrics["clat_hist"] = clat_histogram(merged.bins)
    if cpu is not None and cpu.window_s > 0 and merged.ios > 0:
        metrics["cpu_ns_per_op"] = cpu.cpu_ns / cpu.window_s / metrics["iops"]
    return metrics


def clat_histogram(bins: Mapping[int, int]) -> dict[str, list[int]]:
    """The merged clat bins as the harness's `cdf` field: upper bounds (ns) and counts."""
    ordered = sorted((k, n) for k, n in bins.items() if n > 0)
    return {"le_ns": [bucket_upper(k) for k, _ in ordered], "counts": [n for _, n in ordered]}


def bucket_upper(mean: int) -> int:
    """The upper bound of the fio latency bucket whose mean is `mean` (FIO_IO_U_PLAT_BITS 6:
    values under 128 ns have buckets of 1 ns, then each power of two has 64 buckets)."""
    if mean < 128:
        return mean
    width = 1 << (mean.bit_length() - 1 - 6)
    return mean + width // 2
