"""E-Divisive means change points as Apache Otava (formerly DataStax hunter) finds them.

Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance Regressions"
(ICPE 2023), on Matteson & James's E-Divisive: instead of permutation tests, each candidate
split is tested with Student's t-test, in two steps:

1. Split: windows of `window` points sliding by half a window; in each, bisect recursively
   at the point that maximises the energy statistic Q while the split's t-test gives
   p <= 10 x max_p ("weak" change points); the union of all windows' points.
2. Merge: with the weak points' t-tests recomputed between their neighbours, drop the one
   with the largest p while any has p >= max_p, recomputing its neighbours each time.

Deterministic (no permutations). Indexes are of the first point at the new level.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray
from scipy.special import stdtr

WINDOW = 50
MAX_P = 0.001


@dataclass(frozen=True)
class Split:
    index: int
    """First point of the right segment."""
    p_value: float
    mean_before: float
    mean_after: float


def best_split(x: NDArray[np.float64]) -> tuple[int, float]:
    """(τ, Q): the split of x into x[:τ], x[τ:κ] that maximises Matteson & James's Q over
    every τ < κ <= len(x); τ is relative to x."""
    size = x.size
    distances = np.abs(x[:, None] - x[None, :])
    prefix = np.zeros((size + 1, size + 1))
    prefix[1:, 1:] = distances.cumsum(axis=0).cumsum(axis=1)
    grid = _grid(size)
    # prefix[a, b] = sum of distances[:a, :b]; symmetric, as the distances are.
    flat = prefix.ravel()
    corner = flat[grid.corner]
    to_tau, to_kappa = flat[grid.tau_diagonal], flat[grid.kappa_diagonal]
    between = corner - to_tau  # distances[:τ, τ:κ]
    within_left = to_tau / 2  # pairs inside [:τ]
    within_right = (to_kappa - 2 * corner + to_tau) / 2  # pairs inside [τ:κ]
    q = grid.between * between - grid.left * within_left - grid.right * within_right
    best = int(np.argmax(q))
    return int(grid.tau[best]), float(q[best])


@dataclass(frozen=True)
class _Grid:
    """Every (τ, κ) with τ < κ of a window of `size` points, as flat indexes into the
    (size + 1)² prefix sums, and Q's coefficients for each: n = τ, m = κ - τ,
    Q = 2/(n+m) between - 2m/((n+m)(n-1)) left - 2n/((n+m)(m-1)) right (a side of one point
    has no pairs: its coefficient is 0)."""

    tau: NDArray[np.int64]
    corner: NDArray[np.int64]
    tau_diagonal: NDArray[np.int64]
    kappa_diagonal: NDArray[np.int64]
    between: NDArray[np.float64]
    left: NDArray[np.float64]
    right: NDArray[np.float64]


@cache
def _grid(size: int) -> _Grid:
    """The grid of a window of `size` points (the windows of a series are mostly of one
    size: made once)."""
    tau, kappa = np.meshgrid(np.arange(1, size), np.arange(2, size + 1), indexing="ij")
    valid = kappa > tau
    tau, kappa = tau[valid], kappa[valid]  # row-major: argmax ties resolve as before
    row = size + 1
    n = tau.astype(float)
    m = (kappa - tau).astype(float)
    total = n + m
    with np.errstate(divide="ignore", invalid="ignore"):
        left = np.where(n > 1, 2 * m / (total * (n - 1)), 0.0)
        right = np.where(m > 1, 2 * n / (total * (m - 1)), 0.0)
    return _Grid(
        tau=tau,
        corner=tau * row + kappa,
        tau_diagonal=tau * row + tau,
        kappa_diagonal=kappa * row + kappa,
        between=2 / total,
        left=left,
        right=right,
    )


def t_test(left: NDArray[np.float64], right: NDArray[np.float64]) -> float:
    """Two-sided Student's t-test p from the segments' means and (population) deviations, as
    Otava computes it with scipy's ttest_ind_from_stats (pooled variance, n1 + n2 - 2
    degrees of freedom), written out: scipy's wrapper costs more than the test here. 1 when
    it cannot say."""
    n1, n2 = left.size, right.size
    if n1 + n2 <= 2:
        return 1.0
    var1 = float(left.var()) if n1 >= 2 else 0.0
    var2 = float(right.var()) if n2 >= 2 else 0.0
    df = n1 + n2 - 2
    pooled = ((n1 - 1) * var1 + (n2 - 1) * var2) / df
    denominator = np.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (float(left.mean()) - float(right.mean())) / denominator
    p = float(2 * stdtr(df, -np.abs(t)))
    return 1.0 if np.isnan(p) else p


def _bounds(indexes: list[int], size: int) -> list[tuple[int, int]]:
    edges = [0, *indexes, size]
    return [(a, b) for a, b in pairwise(edges) if a != b]


def _window_splits(x: NDArray[np.float64], max_p: float) -> list[int]:
    """Recursive bisection of one window: the indexes whose t-test passes max_p."""
    found: list[int] = []
    while True:
        best: tuple[float, int, int, int] | None = None
        for start, stop in _bounds(found, x.size):
            if stop - start < 2:
                continue
            tau, q = best_split(x[start:stop])
            if best is None or q > best[0]:
                best = (q, start + tau, start, stop)
        if best is None:
            return found
        _, index, start, stop = best
        if t_test(x[start:index], x[index:stop]) > max_p:
            return found
        found = sorted([*found, index])


def _stats(x: NDArray[np.float64], indexes: list[int], k: int) -> Split:
    index = indexes[k]
    start = indexes[k - 1] if k > 0 else 0
    stop = indexes[k + 1] if k + 1 < len(indexes) else x.size
    left, right = x[start:index], x[index:stop]
    return Split(index, t_test(left, right), float(np.mean(left)), float(np.mean(right)))


def _magnitude(split: Split) -> float:
    if split.mean_before == 0 or split.mean_after == 0:
        return 0.0
    return max(
        abs(split.mean_after / split.mean_before - 1), abs(split.mean_before / split.mean_after - 1)
    )


def change_points(
    values: NDArray[np.float64], window: int = WINDOW, max_p: float = MAX_P
) -> list[Split]:
    """The change points of `values` (ordered), each with its t-test between its neighbours."""
    x = np.asarray(values, dtype=float)
    weak_p = max_p * 10 if max_p < 0.05 else (max_p * 2 if max_p < 0.5 else max_p)
    weak: set[int] = set()
    step = window // 2
    start = 0
    while start < x.size:
        stop = min(start + window, x.size)
        found = [start + i for i in _window_splits(x[start:stop], weak_p)]
        weak.update(found)
        start = max(found[-1] if found else 0, start + step)
    indexes = sorted(weak)
    splits = [_stats(x, indexes, k) for k in range(len(indexes))]
    while splits:
        weakest = max(range(len(splits)), key=lambda k: splits[k].p_value)
        if splits[weakest].p_value < max_p:
            weakest = min(range(len(splits)), key=lambda k: _magnitude(splits[k]))
            if _magnitude(splits[weakest]) > 0:
                return splits
        del indexes[weakest]
        del splits[weakest]
        for k in (weakest - 1, weakest):
            if 0 <= k < len(splits):
                splits[k] = _stats(x, indexes, k)
    return splits
