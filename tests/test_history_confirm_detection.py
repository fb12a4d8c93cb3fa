"""The newest run's provisional move and its confirmation (numpy only): a move past the noise
floor is provisional whether or not its repeats are apart; confirming repeats at the new
level make it a change, at the old level they drop it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.history.detection import (
    RunFigures,
    confirming_needed,
    newest_changes,
    provisional,
)
from harness.history.synthetic import runs_from_levels
from harness.run.confirming import Ask, allot

pytestmark = pytest.mark.unit


def _flat_then(last: list[float]) -> list[RunFigures]:
    """Twenty runs at 100 with 1% noise, then a run of the repeats `last`."""
    runs = runs_from_levels(np.full(20, 100.0), np.random.default_rng(7))
    return [*runs, RunFigures(float(np.median(last)), last)]


def test_a_move_past_the_floor_is_provisional_also_when_its_repeats_overlap() -> None:
    # The median 8% lower, one repeat among the old level's: Mann-Whitney cannot decide.
    runs = _flat_then([92.0, 91.5, 92.5, 100.5, 92.2])
    assert not any(c.index == 20 for c in newest_changes(runs, 17))
    found = provisional(runs)
    assert found is not None and found.index == 20 and found.p_value == 1.0
    assert found.change == pytest.approx(92.2 / runs[19].median - 1)


def test_a_flat_newest_run_is_not_provisional() -> None:
    assert provisional(_flat_then([100.2, 99.5, 100.9, 99.8, 100.1])) is None
    assert provisional(_flat_then([92.0])[-1:]) is None  # one run: nothing before it


def test_confirming_repeats_at_the_new_level_make_the_change() -> None:
    runs = _flat_then([92.0, 91.5, 92.5, 100.5, 92.2])
    night = runs[-1]
    confirmed = [*runs[:-1], dataclasses.replace(night, confirming=[91.8, 92.4, 92.1, 91.9, 92.6])]
    (change,) = [c for c in newest_changes(confirmed, 17) if c.index == 20]
    assert change.after == night.median  # the night's level: the point is the night's


def test_confirming_repeats_at_the_old_level_drop_the_change() -> None:
    runs = _flat_then([91.0, 91.5, 92.5, 90.5, 92.2])  # apart: the night alone flags it
    assert any(c.index == 20 for c in newest_changes(runs, 17))
    dropped = [
        *runs[:-1],
        dataclasses.replace(runs[-1], confirming=[99.8, 100.3, 100.1, 99.6, 100.4]),
    ]
    assert not any(c.index == 20 for c in newest_changes(dropped, 17))
    # Confirming repeats on the other side of the good run do not make a change either.
    other = [*runs[:-1], dataclasses.replace(runs[-1], confirming=[120.0] * 20)]
    assert not any(c.index == 20 for c in newest_changes(other, 17))


def test_a_night_of_3_repeats_needs_6_confirming_ones_and_gets_them() -> None:
    """3 good repeats against 3 + 5 pooled cannot reach alpha (p 0.012 at best), 3 + 6 can."""
    assert [confirming_needed(n) for n in (2, 3, 4, 5)] == [17, 6, 2, 0]
    runs = runs_from_levels(np.full(20, 100.0), np.random.default_rng(7), repeats=3)
    night = RunFigures(92.0, [92.0, 91.5, 92.5])
    for more, held in ((5, False), (6, True)):
        confirmed = [*runs, dataclasses.replace(night, confirming=[92.1] * more)]
        assert any(c.index == 20 for c in newest_changes(confirmed, 17)) is held, more
    three = Ask("three", "run", (("a", "s", "{}"),), 1.0, 6)
    five = Ask("five", "run", (("b", "s", "{}"),), 1.0)
    allotted = allot([three, five], budget_s=6.0)  # both at 6 repeats would take 12 s
    assert (allotted.chosen, allotted.repeats) == ([three], 6)
    allotted = allot([three, five], budget_s=5.0)  # 6 repeats of 1 s do not fit 5 s
    assert (allotted.chosen, allotted.repeats) == ([five], 5)


def test_a_dropped_night_is_not_the_next_nights_reference() -> None:
    # A one-night spike (-20%) that its confirming run drops; the next night is back at 100.
    spike = [80.1, 79.6, 80.4, 80.0, 79.8]
    runs = _flat_then(spike)
    dropped = dataclasses.replace(runs[-1], confirming=[100.2, 99.7, 100.1, 99.9, 100.4])
    back = [100.3, 99.8, 100.2, 99.6, 100.0]
    after = [*runs[:-1], dropped, RunFigures(float(np.median(back)), back)]
    assert not any(c.index in (20, 21) for c in newest_changes(after, 17))
    assert provisional(after) is None
    # Judged against the spike, the return would be a change of +25%.
    spike_run = RunFigures(float(np.median(spike)), spike)
    assert {c.index for c in newest_changes([spike_run, after[-1]], 1)} == {1}
