"""Medians with distribution-free intervals, and comparisons of two groups of repeats.

The interval of a median comes from order statistics (no distribution assumed); the ratio of
two medians gets a seeded percentile bootstrap; significance is a two-sided Mann-Whitney U.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.rundoc.model import compared_with

ALPHA = 0.05
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000
# Fixed so that the same repeats always give the same interval (reports are diffable).
BOOTSTRAP_SEED = 564
# Up to this many distinct splits of the pooled sample the U test is enumerated exactly.
EXACT_SPLITS = 20_000

# Fields of a workload's result object that identify it rather than measure it.
_IDENTITY_KEYS = frozenset({"event", "strategy", "scenario", "params"})


def flatten_metrics(result: Mapping[str, Any]) -> dict[str, float]:
    """Numeric leaves of a result object, nested keys joined by '.' (`latency_ns.p99`)."""
    flat: dict[str, float] = {}

    def walk(name: str, value: Any) -> None:
        if isinstance(value, bool):  # bool is an int subclass, but a flag is not a metric
            return
        if isinstance(value, int | float):
            if math.isfinite(value):
                flat[name] = float(value)
        elif isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{name}.{key}", inner)

    for key, value in result.items():
        if key not in _IDENTITY_KEYS:
            walk(str(key), value)
    return flat


def _rank_coverage(n: int, k: int) -> float:
    """P(X_(k) <= median <= X_(n-k+1)) for any continuous distribution.

    The count of samples below the median is Binomial(n, 1/2); the interval misses when that
    count is < k or > n-k, and the two tails are equal.
    """
    tail = sum(math.comb(n, i) for i in range(k)) / (1 << n)
    return max(0.0, 1.0 - 2.0 * tail)


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(low, high, coverage): the narrowest symmetric rank interval covering >= 95%.

    When even [min, max] falls short (n <= 5), [min, max] is returned with its real coverage
    (0.9375 at n=5, 0 at n=1) so the caller can show that it is not a 95% interval.
    """
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("median_interval needs at least one value")
    k, coverage = 1, _rank_coverage(n, 1)
    for wider_k in range(2, (n + 1) // 2 + 1):
        wider_coverage = _rank_coverage(n, wider_k)
        if wider_coverage < CONFIDENCE:
            break
        k, coverage = wider_k, wider_coverage
    return xs[k - 1], xs[n - k], coverage


def midpoint(low: Any, high: Any) -> Any:
    """(low + high) / 2 of floats or arrays, finite for finite ends: where the sum overflows
    (two figures near 1.8e308), the halves are added instead (no rounding in either)."""
    with np.errstate(over="ignore"):
        total = np.add(low, high)
    halves = np.divide(low, 2) + np.divide(high, 2)
    middle = np.where(np.isfinite(total), total / 2, halves)
    return float(middle) if middle.ndim == 0 else middle


def median(values: Sequence[float]) -> float:
    """The median, as numpy's, without its overflow to inf between two huge middle values."""
    xs = sorted(values)
    if not xs:
        raise ValueError("median needs at least one value")
    half = len(xs) // 2
    return float(xs[half]) if len(xs) % 2 else float(midpoint(xs[half - 1], xs[half]))


def _row_medians(samples: np.ndarray) -> np.ndarray:
    """The median of each row, as `median` takes it."""
    ordered = np.sort(samples, axis=1)
    width = ordered.shape[1]
    return np.asarray(midpoint(ordered[:, (width - 1) // 2], ordered[:, width // 2]))


def summarize_values(values: Sequence[float]) -> dict[str, float]:
    low, high, coverage = median_interval(values)
    return {
        "median": median(values),
        "min": float(min(values)),
        "max": float(max(values)),
        "ci95_low": low,
        "ci95_high": high,
        "ci_coverage": coverage,
        "n": len(values),
    }


def summarize_cell(repeats: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """metric -> {median, min, max, ci95_low, ci95_high, ci_coverage, n} over the repeats."""
    columns: dict[str, list[float]] = {}
    for result in repeats:
        for name, value in flatten_metrics(result).items():
            columns.setdefault(name, []).append(value)
    return {name: summarize_values(values) for name, values in columns.items()}


def metric_values(cell: Mapping[str, Any], metric: str) -> list[float]:
    """The metric's value in each repeat of the cell that reported it."""
    values = []
    for result in cell.get("repeats") or []:
        value = flatten_metrics(result).get(metric)
        if value is not None:
            values.append(value)
    return values


def absent_reason(cell: Mapping[str, Any], metric: str, role: str) -> str | None:
    """Why the cell has no values of the metric, or None when it has some."""
    if not cell.get("repeats"):
        return f"the {role} has no successful repeats"
    if not metric_values(cell, metric):
        return f"the {role} repeats do not report {metric}"
    return None


def smallest_p(n1: int, n2: int) -> float:
    """Smallest two-sided exact Mann-Whitney p possible with these group sizes (no ties).

    Only the two fully separated orderings out of C(n1+n2, n1) are that extreme, so 3 vs 3
    repeats can never go below p = 0.1 however large the difference.
    """
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value, exact for small samples."""
    from scipy import stats as sps  # here: a second of start-up that most commands never use

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    pooled = np.concatenate([x, y])
    distinct = np.unique(pooled).size
    if distinct == 1:
        return 1.0  # every value equal: no evidence of a difference (scipy would give nan)
    has_ties = distinct < pooled.size
    method: Any = "auto"  # scipy: exact when small and tie-free, normal approximation otherwise
    # scipy's permutation test needs two values a side.
    small = min(x.size, y.size) >= 2 and math.comb(pooled.size, x.size) <= EXACT_SPLITS
    if has_ties and small:
        # scipy's exact distribution assumes no ties; enumerating every split handles them.
        method = sps.PermutationMethod(n_resamples=EXACT_SPLITS)
    p = float(sps.mannwhitneyu(x, y, alternative="two-sided", method=method).pvalue)
    return min(p, 1.0)


def bootstrap_ratio_interval(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of median(candidate) / median(baseline).

    Both groups are resampled with replacement. None when some resampled baseline median is 0
    (the ratio has no upper bound then) or some ratio is beyond a double's range.
    """
    rng = np.random.default_rng(seed)
    base = np.asarray(baseline, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    base_medians = _row_medians(rng.choice(base, size=(resamples, base.size)))
    cand_medians = _row_medians(rng.choice(cand, size=(resamples, cand.size)))
    if np.any(base_medians == 0):
        return None
    with np.errstate(over="ignore"):
        ratios = cand_medians / base_medians
    if not np.all(np.isfinite(ratios)):
        return None
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return float(low), float(high)


def verdict(difference: float, significant: bool, better: str | None, conclusive: bool) -> str:
    """better / worse / no change, from the sign of candidate - baseline and the direction.

    `inconclusive` when the test could not have found a difference (too few repeats);
    `changed` when significant but the metric has no declared direction.
    """
    if not significant:
        return "no change" if conclusive else "inconclusive"
    if difference == 0 or better not in ("higher", "lower"):
        return "changed"
    return "better" if (difference > 0) == (better == "higher") else "worse"


def compare_samples(
    baseline: Sequence[float], candidate: Sequence[float], better: str | None
) -> dict[str, Any]:
    """Ratio of medians with its bootstrap interval, Mann-Whitney p, significance, verdict.

    `reason` says in words why a figure is missing or cannot be significant.
    """
    n_base, n_cand = len(baseline), len(candidate)
    out: dict[str, Any] = {
        "baseline_median": None,
        "candidate_median": None,
        "n_baseline": n_base,
        "n_candidate": n_cand,
        "ratio": None,
        "ci95_low": None,
        "ci95_high": None,
        "p_value": None,
        "significant": False,
        "verdict": "inconclusive",
        "reason": None,
    }
    if n_base == 0 or n_cand == 0:
        out["reason"] = "no values to compare"
        return out
    base_median = median(baseline)
    cand_median = median(candidate)
    p_value = mann_whitney_p(baseline, candidate)
    significant = p_value < ALPHA
    floor = smallest_p(n_base, n_cand)
    reasons = []
    if floor >= ALPHA:
        reasons.append(
            f"{n_base} vs {n_cand} repeats: the smallest possible p is {floor:.2g}, "
            f"so no difference can reach p < {ALPHA}"
        )
    ratio = cand_median / base_median if base_median != 0 else None
    if ratio is None:
        reasons.append("the baseline median is 0, so there is no ratio")
    elif not math.isfinite(ratio):
        reasons.append("the ratio of the medians is beyond a double's range (over 1.8e308)")
    else:
        out["ratio"] = ratio
        if min(n_base, n_cand) < 2:
            reasons.append("a single repeat has no spread, so the ratio has no interval")
        else:
            interval = bootstrap_ratio_interval(baseline, candidate)
            if interval is None:
                reasons.append(
                    "some resampled baseline medians are 0, or some ratios beyond a double's "
                    "range: no ratio interval"
                )
            else:
                out["ci95_low"], out["ci95_high"] = interval
    out.update(
        baseline_median=base_median,
        candidate_median=cand_median,
        p_value=p_value,
        significant=significant,
        verdict=verdict(cand_median - base_median, significant, better, floor < ALPHA),
        reason="; ".join(reasons) or None,
    )
    return out


def params_key(params: Mapping[str, Any] | None) -> str:
    """A hashable, order-independent form of a params object."""
    return json.dumps(params or {}, sort_keys=True)


def compare_cells(
    cells: Sequence[Mapping[str, Any]], baseline: str, metrics: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each cell against the cell of the same scenario and params it is compared with: the
    strategy its `baseline` key names (its twin, or the run's baseline), else `baseline` for
    every other strategy than `baseline` (cells from before the key: compared_with).

    One entry per (candidate cell, metric); entries that cannot be computed are kept with
    `reason` set, so nothing goes silently missing.
    """

    def group(cell: Mapping[str, Any]) -> tuple[Any, str]:
        return cell.get("scenario"), params_key(cell.get("params"))

    by_strategy = {(c.get("strategy"), *group(c)): c for c in cells}
    comparisons = []
    for cell in cells:
        against = compared_with(str(cell.get("strategy")), cell.get("baseline"), baseline)
        if against is None:
            continue
        base_cell = by_strategy.get((against, *group(cell)))
        for metric in metrics:
            name = str(metric["name"])
            better = metric.get("better")
            entry: dict[str, Any] = {
                "metric": name,
                "scenario": cell.get("scenario"),
                "params": dict(cell.get("params") or {}),
                "baseline": against,
                "candidate": cell.get("strategy"),
                "better": better,
            }
            if base_cell is None:
                entry |= compare_samples([], [], better)
                entry["reason"] = f"no '{against}' cell with this scenario and params"
            else:
                entry |= compare_samples(
                    metric_values(base_cell, name), metric_values(cell, name), better
                )
                missing = absent_reason(base_cell, name, "baseline") or absent_reason(
                    cell, name, "candidate"
                )
                if missing:
                    entry["reason"] = missing
            comparisons.append(entry)
    return comparisons
