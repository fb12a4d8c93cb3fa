"""Say when the machine is the noise: pyperf-like stability warnings for one cell's repeats.

For the cell's headline metric and its CPU per op, over the repeats in the order they ran
(with `--order interleaved`, one repeat per round):

- **spread**: the standard deviation is more than `SPREAD_LIMIT` (10%) of the mean, pyperf's
  own rule ("the benchmark seems unstable");
- **bimodal**: sorted, the values split at their widest gap into two groups of at least two
  values each, and that gap is wider than `GAP_FACTOR` (3) times the wider group's range and
  more than `SPREAD_LIMIT` of the median: two regimes rather than one spread (a simple gap
  heuristic; Hartigan's dip test needs far more than a handful of repeats);
- **drift**: the values trend with the repeat index: Spearman's rank correlation with it has
  an exact two-sided permutation p below `DRIFT_P` (0.05) (n = 5 needs a monotone run; fewer
  than five repeats cannot show drift).

Each warning is one short sentence; `harness doctor` says what to quiet.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from harness.stats import flatten_metrics

# CPU time per op per role (the workload contract's names; harness/format/metrics.py labels
# them), watched beside the headline metric.
CPU_METRIC_NAMES = ("client_cpu_ns_per_op", "server_cpu_ns_per_op", "cpu_ns_per_op")
SPREAD_LIMIT = 0.10
GAP_FACTOR = 3.0
DRIFT_P = 0.05
# Exact permutation p up to this many repeats (8! = 40320 orders); a normal approximation of
# the rank correlation beyond.
EXACT_UP_TO = 8

# What quiets each kind of noise (harness doctor prints the machine's own state).
ADVICE = (
    "pin the CPU frequency (governor `performance`), turn turbo boost off, keep the benchmark "
    "off busy CPUs (isolcpus / a cpuset), stop background load, and run more repeats"
)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _pearson(x: Sequence[float], y: Sequence[float]) -> float:
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else 0.0


def spearman_trend(values: Sequence[float]) -> tuple[float, float]:
    """(rho, two-sided p) of the values against their index."""
    n = len(values)
    index = [float(i + 1) for i in range(n)]
    ranks = _ranks(values)
    rho = _pearson(index, ranks)
    if n <= EXACT_UP_TO:
        extreme = sum(
            1
            for perm in itertools.permutations(ranks)
            if abs(_pearson(index, perm)) >= abs(rho) - 1e-12
        )
        return rho, extreme / math.factorial(n)
    z = rho * math.sqrt(n - 1)
    return rho, math.erfc(abs(z) / math.sqrt(2))


def warnings_for(figures: Sequence[float]) -> list[str]:
    """The stability warnings of one metric's values, in repeat order."""
    found: list[str] = []
    n = len(figures)
    if n < 3:
        return found
    # Every test below is scale-free: taken on the values over a power of two that brings the
    # largest to at most 1, the sums of means and deviations cannot overflow (1e308 repeats).
    exponent = math.frexp(max(abs(v) for v in figures))[1]
    values = [math.ldexp(v, -exponent) for v in figures]

    def shown(scaled: float) -> str:
        return f"{math.ldexp(scaled, exponent):.4g}"

    mean = statistics.fmean(values)
    med = statistics.median(values)
    if mean != 0:
        cv = statistics.stdev(values) / abs(mean)
        if cv > SPREAD_LIMIT:
            found.append(f"spread: stdev is {cv:.0%} of the mean (> {SPREAD_LIMIT:.0%})")
    if n >= 4 and med != 0:
        s = sorted(values)
        gaps = [(s[i + 1] - s[i], i) for i in range(n - 1)]
        gap, at = max(gaps)
        low, high = s[: at + 1], s[at + 1 :]
        if len(low) >= 2 and len(high) >= 2:
            wider = max(low[-1] - low[0], high[-1] - high[0])
            if gap > GAP_FACTOR * wider and gap > SPREAD_LIMIT * abs(med):
                found.append(
                    f"bimodal: {len(low)} repeats near {shown(statistics.median(low))}, "
                    f"{len(high)} near {shown(statistics.median(high))}"
                )
    if n >= 5:
        rho, p = spearman_trend(values)
        if p < DRIFT_P:
            way = "rising" if rho > 0 else "falling"
            found.append(f"drift: {way} across the rounds (Spearman rho {rho:+.2f}, p={p:.2g})")
    return found


def cell_warnings(
    repeats: Sequence[Mapping[str, Any]], metrics: Sequence[str]
) -> dict[str, list[str]]:
    """metric -> its warnings, for the metrics (of `metrics`) with some."""
    flat = [flatten_metrics(r) for r in repeats]
    out: dict[str, list[str]] = {}
    for metric in metrics:
        values = [f[metric] for f in flat if metric in f]
        found = warnings_for(values)
        if found:
            out[metric] = found
    return out


def stability_notes(cells: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> list[str]:
    """One line per cell with warnings (run.json's `cells[].stability`), then what to do."""
    lines = []
    for cell in cells:
        warned = cell.get("stability") or {}
        if warned:
            parts = [
                f"{labels.get(metric, metric)} {'; '.join(found)}"
                for metric, found in warned.items()
            ]
            lines.append(f"unstable ({cell.get('id')}): " + " | ".join(parts))
    if lines:
        lines.append(
            "the machine may be the noise: `harness doctor` shows what to quiet "
            f"({ADVICE.split(', and run')[0]})"
        )
    return lines
