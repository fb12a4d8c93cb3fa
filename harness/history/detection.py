"""Change points of one series: the newest runs against the previous good run (Mann-Whitney U
on the repeats), and retrospective E-Divisive means over the whole history.

A change must exceed the series' noise floor: max(1%, Q3 + 3 x IQR of the absolute
run-to-run relative changes of the medians over the last 30 runs), as rustc-perf sets its
significance threshold. E-Divisive judges a run once `CONFIRM_RUNS` runs follow it; until
then the newest-run test speaks for it, so a regression alarms the night it lands and is
confirmed or withdrawn by the nights after.

The newest run's move past the floor is provisional: the nightly runs its cell again
(`harness history confirm`), and once those confirming repeats are recorded the newest-run
test judges the night's repeats and them together (`RunFigures.confirming`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray

from harness.history import edivisive
from harness.stats import mann_whitney_p

ALPHA = 0.01
MIN_NOISE = 0.01
NOISE_RUNS = 30
CONFIRM_RUNS = 3
MAX_CONFIRMING = 40

Method = str  # "newest" | "edivisive"


@dataclass(frozen=True)
class RunFigures:
    """One run's figures in a series."""

    median: float
    samples: Sequence[float]
    confirming: Sequence[float] = ()
    """The repeats of a run that confirmed this one's move (harness history confirm), kept
    apart from its points: the newest-run test pools them with `samples`."""


@dataclass(frozen=True)
class Change:
    index: int
    """The first run at the new level (position in the series)."""
    method: Method
    before: float
    after: float
    noise: float
    p_value: float

    @property
    def change(self) -> float:
        return self.after / self.before - 1 if self.before else 0.0


def noise_floor(medians: NDArray[np.float64], end: int) -> float:
    """The noise floor at position `end` (exclusive): from the NOISE_RUNS runs before it, or
    while fewer precede it, from the series' first NOISE_RUNS + 1 runs (an early change is
    not judged against a noise measured on two or three runs). Below five run-to-run changes
    it is MIN_NOISE: the quartiles of four are pulled up by the step itself (three flat
    runs and two 40% lower gave a floor of 40%, and no change)."""
    stop = max(end, min(NOISE_RUNS + 1, medians.size))
    window = medians[max(0, stop - NOISE_RUNS - 1) : stop]
    previous, current = window[:-1], window[1:]
    ok = previous != 0
    changes = np.abs(current[ok] / previous[ok] - 1)
    if changes.size < 5:
        return MIN_NOISE
    return float(floor_of_changes(changes))


def floor_of_changes(changes: NDArray[np.float64]) -> NDArray[np.float64]:
    """max(MIN_NOISE, Q3 + 3 x IQR) of absolute run-to-run relative changes, along the last
    axis (one floor per row: harness/history/power.py judges many simulated series at once)."""
    ordered = np.sort(changes, axis=-1)
    q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
    floor: NDArray[np.float64] = np.maximum(MIN_NOISE, q3 + 3 * (q3 - q1))
    return floor


def _quantile(ordered: NDArray[np.float64], q: float) -> NDArray[np.float64]:
    """np.percentile's (linear) quantile of rows already sorted: np.percentile along an
    axis partitions each row again, 30 times slower on a thousand rows of 30."""
    position = q * (ordered.shape[-1] - 1)
    low = int(np.floor(position))
    high = min(low + 1, ordered.shape[-1] - 1)
    value: NDArray[np.float64] = ordered[..., low] + (position - low) * (
        ordered[..., high] - ordered[..., low]
    )
    return value


def newest_changes(runs: Sequence[RunFigures], first: int) -> list[Change]:
    """Each run from position `first` on against the previous good run (the last one before it
    that is not itself a change): Mann-Whitney U at ALPHA on the repeats and a change of the
    median above the noise floor. A run at the level of the last change is that change seen
    again, not another one: one step is one change point (and one event) from the night it
    lands until E-Divisive settles it, and the runs after it are judged from its level.

    A run with confirming repeats is judged on its repeats and those together: its move
    holds when their median is still past the floor on the same side and the pooled repeats
    are apart from the good run's at ALPHA; otherwise it is no change."""
    return [
        Change(j.index, "newest", runs[j.good].median, runs[j.index].median, j.noise, j.p)
        for j in _judged(runs, first)
        if j.p is not None
    ]


def provisional(runs: Sequence[RunFigures]) -> Change | None:
    """The newest run's move that a confirming run would decide: its median past the noise
    floor from the previous good run, as the newest-run test finds that run, whether or not
    its repeats are apart (p is then 1.0); None when it did not move, is the level of the
    last change seen again, or E-Divisive judges it already."""
    if len(runs) < 2:
        return None
    judged = list(_judged(runs, _first_open(runs)))
    if not judged or judged[-1].index != len(runs) - 1 or not judged[-1].past:
        return None
    last = judged[-1]
    before, after = runs[last.good].median, runs[last.index].median
    return Change(last.index, "newest", before, after, last.noise, last.p or 1.0)


@dataclass(frozen=True)
class _Judged:
    index: int
    good: int  # the previous good run
    noise: float
    past: bool  # the night's median past the floor, not at the last change's level
    p: float | None  # Mann-Whitney's p when it is a change


def _judged(runs: Sequence[RunFigures], first: int) -> Iterator[_Judged]:
    medians = np.array([run.median for run in runs], dtype=float)
    last_change: int | None = None
    good = first - 1
    for index in range(max(first, 1), len(runs)):
        if good < 0:
            good = index
            continue
        noise = noise_floor(medians, good + 1)
        run = runs[index]
        past = _past(runs[good].median, run.median, noise)
        if past and last_change is not None and _moved(runs[last_change], run, noise) is None:
            past = False  # the last change's level, seen again
        p = _moved(runs[good], run, noise) if past else None
        if past and run.confirming:
            p = _held(runs[good], run, noise)
        yield _Judged(index, good, noise, past, p)
        # A move its confirming run dropped was the night's, not the code's: the next night is
        # judged against the good run before it, or its return to the old level would alarm.
        if p is None and not (past and run.confirming):
            good = index
        else:
            last_change = index


def _past(base: float, new: float, noise: float) -> bool:
    return base != 0 and abs(new / base - 1) > noise


def _moved(base: RunFigures, new: RunFigures, noise: float) -> float | None:
    """Mann-Whitney U's p when `new` moved from `base` (its median past the noise floor, its
    repeats apart at ALPHA), else None."""
    if not _past(base.median, new.median, noise):
        return None
    if len(base.samples) < 2 or len(new.samples) < 2:
        return None
    p = mann_whitney_p(base.samples, new.samples)
    return p if p < ALPHA else None


@cache
def confirming_needed(repeats: int) -> int | None:
    """The fewest confirming repeats with which a night of `repeats` repeats, pooled with
    them, can be apart from a good run of as many at ALPHA (every pooled repeat past every
    good one); None when none up to MAX_CONFIRMING can."""
    base = [float(i) for i in range(repeats)]
    for more in range(MAX_CONFIRMING + 1):
        pooled = [1e6 + i for i in range(repeats + more)]
        if repeats >= 2 and mann_whitney_p(base, pooled) < ALPHA:
            return more
    return None


def _held(base: RunFigures, new: RunFigures, noise: float) -> float | None:
    """Mann-Whitney U's p when the night's move still shows with its confirming repeats: the
    pooled repeats' median past the floor on the night's side, and apart at ALPHA."""
    pooled = [*new.samples, *new.confirming]
    both = RunFigures(float(np.median(pooled)), pooled)
    if (both.median > base.median) != (new.median > base.median):
        return None
    return _moved(base, both, noise)


def retrospective_changes(runs: Sequence[RunFigures]) -> list[Change]:
    """E-Divisive change points with at least CONFIRM_RUNS runs after them whose shift
    exceeds the noise floor.

    A drift shows as a staircase: E-Divisive splits it into steps that are each below the
    floor. Consecutive steps in one direction therefore add up from the level before the
    first one, and the step at which the sum exceeds the floor is the change point.
    """
    medians = np.array([run.median for run in runs], dtype=float)
    found = []
    anchor: tuple[float, float, bool] | None = None  # level before, floor there, rising
    for split in edivisive.change_points(medians):
        if split.index > len(runs) - CONFIRM_RUNS or split.mean_before == 0:
            continue
        rising = split.mean_after > split.mean_before
        if anchor is None or anchor[2] != rising:
            anchor = (split.mean_before, noise_floor(medians, split.index), rising)
        level, noise, _ = anchor
        if abs(split.mean_after / level - 1) > noise:
            found.append(
                Change(split.index, "edivisive", level, split.mean_after, noise, split.p_value)
            )
            anchor = None
    return found


def series_changes(runs: Sequence[RunFigures]) -> list[Change]:
    """The series' change points: E-Divisive over the runs it can judge, the newest-run test
    over the last CONFIRM_RUNS runs (those after the last E-Divisive point)."""
    settled = retrospective_changes(runs)
    return settled + newest_changes(runs, _first_open(runs, settled))


def _first_open(runs: Sequence[RunFigures], settled: Sequence[Change] | None = None) -> int:
    """The first run the newest-run test judges: the last CONFIRM_RUNS, after E-Divisive's
    last change point."""
    if settled is None:
        settled = retrospective_changes(runs)
    return max(len(runs) - CONFIRM_RUNS, settled[-1].index + 1 if settled else 0)
