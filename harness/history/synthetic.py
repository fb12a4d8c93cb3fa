"""Synthetic series for the detection tests and the scale benchmark: runs of REPEATS repeats,
each repeat the run's level times (1 + noise x a standard normal draw)."""

from __future__ import annotations

import numpy as np

from harness.history.detection import RunFigures

REPEATS = 5
NOISE = 0.01


def runs_from_levels(
    levels: np.ndarray,
    rng: np.random.Generator,
    noise: float = NOISE,
    repeats: int = REPEATS,
) -> list[RunFigures]:
    samples = levels[:, None] * (1 + noise * rng.standard_normal((levels.size, repeats)))
    return [RunFigures(float(np.median(row)), [float(v) for v in row]) for row in samples]


def step(size: int, at: int, height: float) -> np.ndarray:
    """Level 100 before `at`, 100 x (1 + height) from it on."""
    levels = np.full(size, 100.0)
    levels[at:] *= 1 + height
    return levels


def drift(size: int, start: int, per_run: float) -> np.ndarray:
    """Level 100 until `start`, then growing by `per_run` (relative) each run."""
    levels = np.full(size, 100.0)
    after = np.arange(size) - start
    return levels * np.where(after > 0, (1 + per_run) ** after.clip(min=0), 1.0)
