"""The minimum detectable change of each series: the smallest step that the history's detector
(harness/history/detection.py) flags in POWER of the series it lands in, from the series' own
recorded noise and the repeats it gets, the night the step lands and within three nights.

The noise of a series (`Noise`), from its last NOISE_RUNS + 1 measured runs:
- within: the relative standard deviation of the repeats within a run (each run's sample
  deviation over its mean), pooled over the runs by their degrees of freedom.
- between: the relative standard deviation of the nightly level beyond what `within`
  explains: from the run-to-run changes of the medians (the mean of their squares over 2, so
  that a step in the history does not count as noise), less the variance a median of the
  run's repeats has from `within` alone. 0 when `within` explains it all; the whole spread of
  the medians when the runs have a repeat each (no `within`); None below MIN_RUNS runs.

The detector it models, as it stands once a series has NOISE_RUNS runs (a younger series has
the 1% floor, and more false alarms): a run is a change when its median is past the noise
floor (max(1%, Q3 + 3 x IQR of the last 30 run-to-run changes)) and its repeats are apart
from the previous run's (Mann-Whitney U at ALPHA), that night; from CONFIRM_RUNS runs at the
new level E-Divisive's test judges it too (Student's t of the medians before against those
after at MAX_P, the means' change past the floor). It is simulated with a fixed seed, TRIALS
series a call, each a night's level times (1 + between x a normal draw) and each repeat that
level times (1 + within x a normal draw), half the steps up and half down: for each series
the smallest step that it flags is solved exactly (the floor's and the t-test's conditions
are monotone in the step; Mann-Whitney's p is the real test's for each U), and the minimum
detectable change is the POWER quantile of those. E-Divisive is assumed to split where the
step is; before it stand NOISE_RUNS + 1 runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray
from scipy.special import stdtrit
from sqlalchemy import Connection

from harness.history.detection import ALPHA, CONFIRM_RUNS, NOISE_RUNS, floor_of_changes
from harness.history.edivisive import MAX_P
from harness.history.recorded import recorded_series
from harness.stats import mann_whitney_p

POWER = 0.8
"""The share of steps the detector must flag for the step to count as detectable."""
TRIALS = 1000
SEED = 34
MIN_RUNS = 3
"""Runs a series needs for a figure of its noise between nights (two run-to-run changes)."""
MAX_STEP = 1.0
"""Steps are looked for up to 100% (a step that needs more is not detectable: None)."""
HISTORY = NOISE_RUNS + 1


@dataclass(frozen=True)
class Noise:
    within: float | None
    """Relative standard deviation of the repeats within a run, pooled over the runs."""
    between: float | None
    """Relative standard deviation of the nightly level beyond what `within` explains."""


@dataclass(frozen=True)
class MinDetectable:
    """The smallest step (a fraction: 0.03 is 3%) the detector flags in POWER of series,
    the night it lands and within three nights; None when too few runs to say, or when no
    step up to MAX_STEP would be flagged (fewer repeats than Mann-Whitney needs at ALPHA)."""

    night: float | None
    three_nights: float | None


@dataclass(frozen=True)
class SeriesPower:
    suite: str
    strategy: str
    scenario: str
    params: dict[str, str]
    metric: str
    machine: str
    runs: int
    noise: Noise
    repeats: int
    """The repeats of its newest run: what the nightly gives it."""
    min_detectable: MinDetectable


def min_detectable(noise: Noise, repeats: int, nights: int) -> float | None:
    """The smallest step the detector flags in POWER of series with this noise and this
    many repeats a run, within `nights` nights of its landing (1: the night it lands)."""
    if nights < 1 or repeats < 1:
        raise ValueError(f"nights and repeats are at least 1, got {nights} and {repeats}")
    return _quantile(_smallest_flagged(noise, repeats, nights)[1])


def noise_of(medians: Sequence[float], repeats: Sequence[Sequence[float]]) -> Noise:
    """A series' noise from its runs' medians and repeats, oldest first (the last HISTORY)."""
    medians = list(medians)[-HISTORY:]
    repeats = list(repeats)[-HISTORY:]
    within = _within(repeats)
    return Noise(within, _between(medians, [len(r) for r in repeats], within))


def series_power(conn: Connection, *, suite: str | None = None) -> list[SeriesPower]:
    """Every series (of one suite, if given) with its noise and minimum detectable change,
    in the order suite, strategy, scenario, parameters, metric, machine."""
    out = []
    for found in recorded_series(conn, suite=suite, last=HISTORY):
        noise = noise_of(found.medians, found.repeats)
        given = len(found.repeats[-1]) if found.repeats else 0
        out.append(
            SeriesPower(
                suite=found.suite,
                strategy=found.strategy,
                scenario=found.scenario,
                params=found.params,
                metric=found.metric,
                machine=found.machine,
                runs=found.runs,
                noise=noise,
                repeats=given,
                min_detectable=_both(noise, given),
            )
        )
    return out


def _both(noise: Noise, repeats: int) -> MinDetectable:
    """The night's and three nights' figures from one simulation."""
    if repeats < 1:
        return MinDetectable(None, None)
    night, later = _smallest_flagged(noise, repeats, CONFIRM_RUNS)
    return MinDetectable(_quantile(night), _quantile(later))


def _within(repeats: Sequence[Sequence[float]]) -> float | None:
    """Pooled relative standard deviation of the runs' repeats (runs of two repeats or more,
    with a mean other than 0); None without such a run."""
    squares = 0.0
    freedom = 0
    for run in repeats:
        values = np.asarray(run, dtype=float)
        if values.size < 2 or values.mean() == 0:
            continue
        squares += float(values.var(ddof=1)) / float(values.mean()) ** 2 * (values.size - 1)
        freedom += values.size - 1
    return math.sqrt(squares / freedom) if freedom else None


def _between(medians: Sequence[float], counts: Sequence[int], within: float | None) -> float | None:
    if len(medians) < MIN_RUNS:
        return None
    values = np.asarray(medians, dtype=float)
    previous, current = values[:-1], values[1:]
    ok = previous != 0
    if not ok.any():
        return None
    changes = current[ok] / previous[ok] - 1
    spread = float(np.mean(changes**2)) / 2
    if within is not None:
        spread -= within**2 * float(np.mean([_median_variance(max(n, 1)) for n in counts]))
    return math.sqrt(max(spread, 0.0))


@cache
def _median_variance(repeats: int) -> float:
    """The variance of the median of `repeats` standard normal draws (fixed seed)."""
    draws = np.random.default_rng(SEED).standard_normal((200_000, repeats))
    return float(np.median(draws, axis=1).var())


@dataclass(frozen=True)
class _Draws:
    """Standard normal draws for TRIALS series: the levels of the HISTORY runs before the
    step and of `nights` runs from it, each run's median of `repeats` repeats (as a
    standard normal's), the repeats of the good run and of the step's first run, and the
    step's direction (+1, -1)."""

    levels: NDArray[np.float64]  # (TRIALS, HISTORY + nights)
    medians: NDArray[np.float64]  # (TRIALS, HISTORY + nights)
    good: NDArray[np.float64]  # (TRIALS, repeats)
    landed: NDArray[np.float64]  # (TRIALS, repeats)
    sign: NDArray[np.float64]  # (TRIALS,)


@cache
def _draws(repeats: int, nights: int) -> _Draws:
    """The runs up to the step's first from one seed, the later nights' from another: the
    night's figure is the same whichever `nights` is asked for."""
    first = np.random.default_rng([SEED, repeats])
    within = first.standard_normal((TRIALS, HISTORY + 1, repeats))
    levels = first.standard_normal((TRIALS, HISTORY + 1))
    later = np.random.default_rng([SEED, repeats, nights])
    medians = np.median(within, axis=2)
    if nights > 1:
        more = later.standard_normal((TRIALS, nights - 1, repeats))
        medians = np.concatenate([medians, np.median(more, axis=2)], axis=1)
        levels = np.concatenate([levels, later.standard_normal((TRIALS, nights - 1))], axis=1)
    return _Draws(
        levels=levels,
        medians=medians,
        good=within[:, HISTORY - 1],
        landed=within[:, HISTORY],
        sign=np.where(np.arange(TRIALS) % 2 == 0, 1.0, -1.0),
    )


@cache
def _u_needed(repeats: int) -> int | None:
    """The fewest pairs (good repeat, new repeat) ordered in the step's direction for which
    Mann-Whitney's p (harness.stats, the detector's) is below ALPHA, repeats a side; None
    when no ordering reaches it."""
    if repeats < 2:
        return None
    base = [float(v) for v in range(repeats)]
    # From the middle up: p falls as the pairs in one direction grow (it is symmetric).
    for u in range((repeats * repeats + 1) // 2, repeats * repeats + 1):
        # A new repeat above `count` of the good run's: u pairs in all, no ties.
        counts = [min(repeats, max(0, u - k * repeats)) for k in range(repeats)]
        new = [c - 0.5 + 1e-3 * k for k, c in enumerate(counts)]
        if sum(counts) == u and mann_whitney_p(base, new) < ALPHA:
            return u
    return None


def _smallest_flagged(
    noise: Noise, repeats: int, nights: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each simulated series' smallest flagged step the night it lands and within `nights`
    nights (inf: none up to MAX_STEP; nan: the noise is not known)."""
    if noise.between is None:
        unknown = np.full(TRIALS, np.nan)
        return unknown, unknown
    d = _draws(repeats, nights)
    within = noise.within or 0.0
    level = 1 + noise.between * d.levels
    medians = level * (1 + within * d.medians)
    history = medians[:, :HISTORY]
    floor = floor_of_changes(np.abs(history[:, 1:] / history[:, :-1] - 1))
    up = d.sign > 0
    # The night: the landed run's median past the floor from the good run's, in the step's
    # direction, and its repeats apart (Mann-Whitney) from the good run's.
    ratio = medians[:, HISTORY] / medians[:, HISTORY - 1]
    by_floor = np.where(up, (1 + floor) / ratio - 1, 1 - (1 - floor) / ratio)
    by_test = _by_mann_whitney(level, within, d, repeats)
    night = _capped(np.maximum.reduce([by_floor, by_test, np.zeros(TRIALS)]))
    if nights < CONFIRM_RUNS:
        return night, night
    later = np.minimum(night, _capped(_by_edivisive(history, medians[:, HISTORY:], floor, up)))
    return night, later


def _by_mann_whitney(
    level: NDArray[np.float64], within: float, d: _Draws, repeats: int
) -> NDArray[np.float64]:
    """The smallest step at which the landed run's repeats are apart from the good run's."""
    needed = _u_needed(repeats)
    if needed is None:
        return np.full(TRIALS, np.inf)
    good = level[:, HISTORY - 1, None] * (1 + within * d.good)
    landed = level[:, HISTORY, None] * (1 + within * d.landed)
    # The step at which each pair (good j, landed k) becomes ordered in its direction.
    ratio = good[:, :, None] / landed[:, None, :]
    up = d.sign[:, None, None] > 0
    pairs = np.where(up, ratio - 1, 1 - ratio).reshape(TRIALS, -1)
    if needed == 0:
        return np.zeros(TRIALS)
    return np.partition(pairs, needed - 1, axis=1)[:, needed - 1]


def _by_edivisive(
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    floor: NDArray[np.float64],
    up: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """The smallest step at which E-Divisive's test of the medians before against those after
    (Student's t, pooled, as edivisive.t_test) is below MAX_P and the means' change is past
    the floor."""
    n1, n2 = before.shape[1], after.shape[1]
    df = n1 + n2 - 2
    mean_b, mean_a = before.mean(axis=1), after.mean(axis=1)
    by_floor = np.where(up, (1 + floor) * mean_b / mean_a - 1, 1 - (1 - floor) * mean_b / mean_a)
    # t(g) = (g a - b) / sqrt(c (A + B g^2)) for the after medians times g = 1 +- step; t is
    # increasing in g, and t^2 = T^2 is a quadratic in g whose roots are t = -T and t = +T.
    t2 = float(stdtrit(df, 1 - MAX_P / 2)) ** 2
    c = (1 / n1 + 1 / n2) / df
    big_a = (n1 - 1) * before.var(axis=1)
    big_b = (n2 - 1) * after.var(axis=1)
    lead = mean_a**2 - t2 * c * big_b
    half = mean_a * mean_b
    constant = mean_b**2 - t2 * c * big_a
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(half**2 - lead * constant)
        high = (half + root) / lead
        low = (half - root) / lead
    by_test = np.where(up, high - 1, 1 - low)
    by_test = np.where((lead > 0) & np.isfinite(by_test), by_test, np.inf)
    steps: NDArray[np.float64] = np.maximum.reduce([by_floor, by_test, np.zeros(by_floor.size)])
    return steps


def _capped(steps: NDArray[np.float64]) -> NDArray[np.float64]:
    capped: NDArray[np.float64] = np.where(steps < MAX_STEP, steps, np.inf)
    return capped


def _quantile(steps: NDArray[np.float64]) -> float | None:
    """The POWER quantile of the series' smallest flagged steps (the step flagged in POWER of
    them); None when it is past MAX_STEP or the noise is not known."""
    if np.isnan(steps).any():
        return None
    ordered = np.sort(steps)
    value = float(ordered[math.ceil(POWER * ordered.size) - 1])
    return value if math.isfinite(value) else None
