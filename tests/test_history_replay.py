"""The nightly's detection replayed night by night (harness/history/replay.py), with and
without confirming runs, and series built from recorded noise (harness/history/resampled.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.history.detection import RunFigures, series_changes
from harness.history.recorded import RecordedSeries
from harness.history.replay import flagged_at_its_night, replay
from harness.history.resampled import JITTER, night, recorded_noise, runs_from_recorded
from harness.history.synthetic import runs_from_levels, step

pytestmark = pytest.mark.unit


def _fresh(levels: np.ndarray, rng: np.random.Generator) -> list[float]:
    return [float(v) for v in levels * (1 + 0.01 * rng.standard_normal(levels.size))]


def _spike() -> list[RunFigures]:
    """70 runs at 100 (1% noise, 5 repeats) but run 40, 20% high for that night only."""
    levels = np.full(70, 100.0)
    levels[40] = 120.0
    return runs_from_levels(levels, np.random.default_rng(3))


def test_a_one_night_spike_is_flagged_at_its_night_unless_confirmation_drops_it() -> None:
    runs = _spike()
    rng = np.random.default_rng(4)
    assert flagged_at_its_night(runs, 40, rising=True)
    assert not flagged_at_its_night(
        runs, 40, rising=True, confirm=lambda n: _fresh(np.full(5, 100.0), rng)
    )


def test_replay_counts_the_events_that_a_later_night_withdrew() -> None:
    """The spike's event opens the night it lands; 29 nights later nothing stands."""
    runs = _spike()
    shown = replay(runs, first=30)
    assert 40 in shown and shown[40].method == "newest" and shown[40].change > 0.15
    assert series_changes(runs) == []


def test_a_step_that_holds_is_flagged_at_its_night_with_or_without_confirmation() -> None:
    levels = step(50, 40, -0.10)
    runs = runs_from_levels(levels, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    assert flagged_at_its_night(runs, 40, rising=False)
    assert flagged_at_its_night(
        runs, 40, rising=False, confirm=lambda n: _fresh(levels[[n] * 5], rng)
    )
    assert not flagged_at_its_night(runs, 40, rising=True)
    assert not flagged_at_its_night(runs, 39, rising=False)


def _series(repeats: list[list[float]], metric: str = "ops_per_sec") -> RecordedSeries:
    return RecordedSeries(
        suite="timers",
        strategy="none",
        scenario="steady",
        params={"concurrency": "64"},
        metric=metric,
        machine="vm",
        runs=len(repeats),
        medians=[float(np.median(r)) for r in repeats],
        repeats=repeats,
    )


def test_recorded_noise_is_each_runs_level_and_the_runs_residuals() -> None:
    (noise,) = recorded_noise([_series([[90.0, 100.0, 110.0], [200.0, 220.0], [5.0]])])
    assert noise.name == "timers none steady concurrency=64 ops_per_sec"
    assert noise.levels == pytest.approx([100 / 155, 210 / 155])  # the run of one repeat: out
    scale3, scale2 = math.sqrt(3 / 2), math.sqrt(2)
    expected = [-0.1 * scale3, 0.0, 0.1 * scale3, -1 / 21 * scale2, 1 / 21 * scale2]
    assert noise.residuals == pytest.approx(expected)


def test_series_without_two_usable_runs_have_no_recorded_noise() -> None:
    assert recorded_noise([_series([[1.0, 2.0]])]) == []  # one run
    assert recorded_noise([_series([[0.0, 0.0], [0.0, 0.0]], "errors")]) == []  # always 0
    assert recorded_noise([_series([[1.0], [2.0], [3.0]])]) == []  # a repeat a run


def test_a_resampled_night_is_a_recorded_level_times_recorded_residuals() -> None:
    """One block (run) a night: every value is that run's level times (1 + a recorded
    residual), moved by at most 5 x JITTER of the residuals' deviation; no two are equal."""
    (noise,) = recorded_noise([_series([[90.0, 100.0, 110.0], [200.0, 220.0]])])
    rng = np.random.default_rng(7)
    near = 5 * JITTER * float(noise.residuals.std())
    for _ in range(20):
        values = night(1.0, noise, rng, 8)
        assert len(set(values)) == 8
        assert any(
            all(np.min(np.abs(v / b - 1 - noise.residuals)) <= near for v in values)
            for b in noise.levels
        )
    # Two runs of one level: the nights' medians follow the levels asked for (x2 from run 5).
    (flat,) = recorded_noise([_series([[90.0, 100.0, 110.0], [95.0, 100.0, 105.0]])])
    runs = runs_from_recorded(step(10, 5, 1.0), flat, rng, 4)
    assert all(len(r.samples) == 4 and r.median == np.median(r.samples) for r in runs)
    assert min(r.median for r in runs[5:]) > 1.5 * max(r.median for r in runs[:5])
