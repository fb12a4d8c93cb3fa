"""Series built from recorded noise, for the detection's figures (scripts/bench-detection):
a block bootstrap of a recorded series' runs, beside synthetic.py's normal noise.

A night is one of the series' recorded runs drawn at random (the block): its mean, over the
series' mean, is the night's level, so that nights differ as the recorded ones did. Its
repeats are that level times (1 + a residual) for residuals drawn with replacement from the
series' recorded repeats, each relative to its own run's mean (x / mean - 1) and scaled by
sqrt(n / (n - 1)) for a run of n (a run's residuals about its own mean are that much
narrower than its noise). Pooling the residuals of the runs keeps their shape (a bimodal
run's two modes) and gives a night more distinct values than one run of three repeats has;
each drawn residual then moves by JITTER of their deviation, so that no two repeats are equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from harness.history.detection import RunFigures
from harness.history.recorded import RecordedSeries

MIN_RUNS = 2
"""Recorded runs (of two repeats or more) a series needs for its nights to differ."""
JITTER = 0.01
"""Each drawn residual moves by a normal draw of this share of the residuals' deviation (a
smoothed bootstrap): a dozen residuals drawn with replacement repeat values, which real
repeats do not, and ties send Mann-Whitney to a permutation test 100 times slower. It
widens the noise by 0.005%."""


@dataclass(frozen=True)
class RecordedNoise:
    name: str
    """suite strategy scenario params metric, as the tables name a series."""
    levels: NDArray[np.float64]
    """Each usable recorded run's mean over the mean of them all."""
    residuals: NDArray[np.float64]
    """Every usable run's repeats relative to its own mean, scaled by sqrt(n / (n - 1))."""


def recorded_noise(found: Sequence[RecordedSeries]) -> list[RecordedNoise]:
    """The noise of each series that has MIN_RUNS runs of two repeats or more with a mean
    other than 0 (a count that is always 0 has no relative noise)."""
    out = []
    for item in found:
        runs = [np.asarray(r, dtype=float) for r in item.repeats if len(r) >= 2]
        runs = [r for r in runs if np.isfinite(r).all() and r.mean() > 0]
        if len(runs) < MIN_RUNS:
            continue
        means = np.array([r.mean() for r in runs])
        residuals = np.concatenate(
            [(r / r.mean() - 1) * math.sqrt(r.size / (r.size - 1)) for r in runs]
        )
        params = " ".join(f"{k}={v}" for k, v in sorted(item.params.items()))
        name = " ".join(
            filter(None, [item.suite, item.strategy, item.scenario, params, item.metric])
        )
        out.append(RecordedNoise(name, means / means.mean(), residuals))
    return out


def night(
    level: float, noise: RecordedNoise, rng: np.random.Generator, repeats: int
) -> list[float]:
    """The repeats of one night at `level` (times a recorded run's level)."""
    block = noise.levels[rng.integers(noise.levels.size)]
    drawn = rng.choice(noise.residuals, size=repeats, replace=True)
    drawn = drawn + JITTER * noise.residuals.std() * rng.standard_normal(repeats)
    return [float(v) for v in level * block * (1 + drawn)]


def runs_from_recorded(
    levels: NDArray[np.float64], noise: RecordedNoise, rng: np.random.Generator, repeats: int
) -> list[RunFigures]:
    """A night per level (synthetic.step's, of 100 with a step), each as `night` draws it."""
    out = []
    for level in levels:
        values = night(float(level), noise, rng, repeats)
        out.append(RunFigures(float(np.median(values)), values))
    return out
