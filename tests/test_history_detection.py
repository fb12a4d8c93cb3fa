"""Detection on synthetic series (numpy only): a 3% step is found at its run, pure noise
raises (almost) no event, a 0.2%/run drift is flagged within 30 runs. Each repeat is its
run's level times (1 + 1% x a standard normal draw)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.history.detection import ALPHA, RunFigures, noise_floor, series_changes
from harness.history.edivisive import best_split, change_points, t_test
from harness.history.synthetic import drift, runs_from_levels, step
from harness.stats import mann_whitney_p

pytestmark = pytest.mark.unit

SEEDS = 100


def test_edivisive_splits_a_clear_step_where_it_is() -> None:
    values = np.r_[np.full(30, 100.0), np.full(30, 110.0)] + np.tile([0.1, -0.1], 30)
    (split,) = change_points(values)
    assert split.index == 30 and split.p_value <= 0.001


def test_noise_floor_is_at_least_one_percent() -> None:
    assert noise_floor(np.full(40, 100.0), 40) == 0.01


@pytest.mark.parametrize(("repeats", "required"), [(10, 95), (5, 65)])
def test_a_3_percent_step_is_found_at_its_run(repeats: int, required: int) -> None:
    """With 10 repeats the floor (Q3 + 3 IQR of run-to-run changes) is ~2%, and the step is
    found in >= 95 of 100 seeds; with make bench's 5 repeats the floor is ~2.8%, and it is
    found in about 72."""
    hits = 0
    for seed in range(SEEDS):
        runs = runs_from_levels(step(100, 60, -0.03), np.random.default_rng(seed), repeats=repeats)
        hits += any(abs(change.index - 60) <= 1 for change in series_changes(runs))
    assert hits >= required


def test_pure_noise_gives_at_most_one_event_per_100_series() -> None:
    events = sum(
        len(series_changes(runs_from_levels(np.full(200, 100.0), np.random.default_rng(s))))
        for s in range(1000, 1000 + SEEDS)
    )
    assert events <= 1


def test_a_drift_of_0_2_percent_per_run_is_flagged_within_30_runs() -> None:
    flagged = 0
    for seed in range(SEEDS):
        runs = runs_from_levels(drift(200, 100, -0.002), np.random.default_rng(2000 + seed))
        flagged += any(change.index >= 95 for change in series_changes(runs[:130]))
    assert flagged >= 95


def test_best_split_maximises_the_energy_statistic_by_its_definition() -> None:
    """Matteson & James's Q, summed pair by pair, against the prefix-sum computation."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.standard_normal(int(rng.integers(3, 25)))
        best = (-np.inf, 0)
        for tau in range(1, x.size):
            for kappa in range(tau + 1, x.size + 1):
                left, right = x[:tau], x[tau:kappa]
                n, m = left.size, right.size
                between = np.abs(left[:, None] - right[None, :]).sum()
                within_left = np.abs(left[:, None] - left[None, :]).sum() / 2
                within_right = np.abs(right[:, None] - right[None, :]).sum() / 2
                q = 2 / (m + n) * between
                q -= 2 * m / ((m + n) * (n - 1)) * within_left if n > 1 else 0
                q -= 2 * n / ((m + n) * (m - 1)) * within_right if m > 1 else 0
                best = max(best, (q, tau), key=lambda b: b[0])
        tau, q = best_split(x)
        assert tau == best[1] and q == pytest.approx(best[0])


def test_t_test_is_scipys_student_t_test_from_the_segments_stats() -> None:
    """Otava's test is scipy's ttest_ind_from_stats on the population deviations; t_test
    writes it out, and must give the same p (1 where scipy says nan)."""
    from scipy.stats import ttest_ind_from_stats

    rng = np.random.default_rng(3)
    cases = [(np.full(3, 5.0), np.full(2, 6.0)), (np.full(2, 1.0), np.full(2, 1.0))]
    for _ in range(500):
        sizes = rng.integers(1, 40, size=2)
        left = rng.normal(100, rng.uniform(0, 3), sizes[0])
        right = rng.normal(100 + rng.normal(0, 2), rng.uniform(0, 3), sizes[1])
        cases.append((left, right))
    for left, right in cases:
        if left.size + right.size <= 2:
            continue
        _, p = ttest_ind_from_stats(
            left.mean(), left.std(), left.size, right.mean(), right.std(), right.size
        )
        expected = 1.0 if np.isnan(p) else float(p)
        assert t_test(left, right) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def _tight(level: float) -> RunFigures:
    """A run of 5 repeats within 0.04% of `level`."""
    return RunFigures(level, [level * (1 + d) for d in (-4e-4, -2e-4, 0.0, 2e-4, 4e-4)])


def _steady(runs: int = 19) -> list[RunFigures]:
    """Levels alternating 100.2 / 99.8: run-to-run changes of 0.4%, a noise floor of 1%."""
    return [_tight(100 + (0.2 if i % 2 == 0 else -0.2)) for i in range(runs)]


# Two-sided Mann-Whitney U of 5 repeats against 5, every new one below every old one.
SEPARATED_P = 2 / math.comb(10, 5)


def test_the_newest_run_test_flags_a_clear_step_at_the_newest_run_only() -> None:
    """The newest run against the previous good run: flagged when its median moved past the
    noise floor and Mann-Whitney U on the repeats gives p < ALPHA; the change reports the
    two medians, the floor and that p."""
    history = _steady()
    previous = history[-1].median
    (change,) = series_changes([*history, _tight(previous * 0.95)])
    assert change.method == "newest" and change.index == len(history)
    assert change.before == previous and change.after == pytest.approx(previous * 0.95)
    assert change.change == pytest.approx(-0.05)
    assert change.noise == pytest.approx(0.01)
    assert change.p_value == pytest.approx(SEPARATED_P) and SEPARATED_P < ALPHA


def test_the_newest_run_test_ignores_noise_a_small_shift_and_overlapping_repeats() -> None:
    history = _steady()
    previous = history[-1].median
    # Within the run-to-run noise.
    assert series_changes([*history, _tight(previous * 1.003)]) == []
    # Significant (p = SEPARATED_P) but below the 1% floor.
    assert series_changes([*history, _tight(previous * 0.991)]) == []
    # The median 3% down, but the repeats straddle the old ones: p >= ALPHA.
    spread = RunFigures(previous * 0.97, [previous * f for f in (0.90, 0.96, 0.97, 1.001, 1.002)])
    assert mann_whitney_p(history[-1].samples, spread.samples) >= ALPHA
    assert series_changes([*history, spread]) == []


def test_the_newest_run_test_compares_with_the_last_good_run_not_the_last_change() -> None:
    """A run back at the old level after one low run is no change; a run lower again than the
    first change is a second one, against the run before the step."""
    history = _steady()
    good = history[-1].median
    assert [c.index for c in series_changes([*history, _tight(good * 0.95), _tight(good)])] == [
        len(history)
    ]
    changes = series_changes([*history, _tight(good * 0.95), _tight(good * 0.90)])
    assert [(c.index, c.method, c.before) for c in changes] == [
        (len(history), "newest", good),
        (len(history) + 1, "newest", good),
    ]


def test_runs_at_the_level_of_a_step_are_that_step_not_more_changes() -> None:
    """One step is one change point on every night until E-Divisive settles it: the nights at
    the new level after it are the same step."""
    history = _steady()
    good = history[-1].median
    for after in range(1, 6):
        changes = series_changes([*history, *(_tight(good * 0.6) for _ in range(after))])
        assert [c.index for c in changes] == [len(history)], (after, changes)
