"""The verdicts of a bisection's steps and its binary search over the range's commits.

In the metric's direction, `worse` is the log of a ratio counted positive when the candidate
is worse than the reference (ops/s down, latency up). The range's effect E is the bad end's
against the good end's, measured on few rounds: a candidate is good when the whole 95%
interval of its ratio is short of half of E; bad when it is worse than the good end (the
whole interval on the worse side of 1, paired p < 0.05) and its interval reaches past half
of E; undecided otherwise (an interval across both 1 and half of E: too wide yet), which
takes more rounds, as many as its interval's width says it needs (rounds_needed), up to the
bound; a step that would need more than the bound ends the bisection undecided at once, with
that count.

Half of E alone decided at first; on the timers suite a 6-round E of 0.75x [0.66-0.99] put
half of it at 0.87x, and the regressing commit itself, 0.88x [0.82-0.98] over 18 rounds,
stayed undecided across it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

GOOD, BAD, SKIP, UNDECIDED = "good", "bad", "skip", "undecided"
Verdict = Literal["good", "bad", "skip", "undecided"]


def worse(ratio: float, better: str) -> float:
    """log(ratio), positive when the ratio is the worse way (`better`: higher or lower)."""
    return -math.log(ratio) if better != "lower" else math.log(ratio)


def worse_interval(figures: Mapping[str, Any], better: str) -> tuple[float, float] | None:
    low, high = figures.get("ci95_low"), figures.get("ci95_high")
    if low is None or high is None or low <= 0 or high <= 0:
        return None
    ends = sorted((worse(float(low), better), worse(float(high), better)))
    return ends[0], ends[1]


def range_verdict(figures: Mapping[str, Any], better: str) -> str:
    """The bad end against the good end: `bad` (worse, significant, the whole interval on the
    worse side of 1), `good` (the whole interval at or past 1 the better way), or undecided."""
    span = worse_interval(figures, better)
    if span is None:
        return UNDECIDED
    if figures.get("significant") and span[0] > 0:
        return BAD
    if span[1] <= 0:
        return GOOD
    return UNDECIDED


def step_verdict(figures: Mapping[str, Any], better: str, effect: float) -> str:
    """A candidate against the good end, `effect` the range's worse-log (> 0)."""
    span = worse_interval(figures, better)
    if span is None:
        return UNDECIDED
    half = effect / 2
    if span[1] < half:
        return GOOD
    if span[0] > 0 and figures.get("significant"):
        return BAD
    return UNDECIDED


def rounds_needed(ratios: Sequence[float], better: str, effect: float | None) -> int | None:
    """About how many rounds an undecided duet needs for a verdict: the rounds at which the 95%
    interval of the median log ratio (its normal approximation, 1.96 x 1.2533 sigma /
    sqrt(n) each side, sigma the log ratios' standard deviation so far) is narrow enough
    around the median so far. The range (`effect` None) needs it wholly on one side of 1; a
    step needs it short of half of `effect` or wholly past 1 the worse way, the nearer goal
    for its median. None with fewer than 3 rounds or a median on the goal itself."""
    logs = [worse(r, better) for r in ratios if r > 0]
    if len(logs) < 3:
        return None
    centre = float(np.median(logs))
    sigma = float(np.std(logs, ddof=1))
    room = abs(centre) if effect is None else max(effect / 2 - centre, centre)
    if room <= 0:
        return None
    return max(len(logs), math.ceil((HALF_WIDTH * sigma / room) ** 2))


HALF_WIDTH = 1.96 * math.sqrt(math.pi / 2)  # the median's 95% half-width, in sigmas x sqrt(n)


def about_steps(candidates: int) -> int:
    """Steps a binary search takes over `candidates` commits between the ends, about."""
    return math.ceil(math.log2(candidates + 1)) if candidates > 0 else 0


@dataclass(frozen=True)
class Outcome:
    status: str  # found | undecided | untestable
    last_good: int  # index into the commits; -1: the good end
    first_bad: int  # index; the bad end is the last


def search(
    commits: Sequence[str],
    judge: Callable[[str, int, int], str],
) -> Outcome:
    """Binary search of the first bad commit of `commits` (oldest first, the last one bad,
    the one before the first good). judge(commit, step, about) gives its verdict; a skipped
    commit is left out and its nearest neighbour tried (as `git bisect skip`)."""
    lo, hi = -1, len(commits) - 1
    skipped: set[int] = set()
    step = 0
    while hi - lo > 1:
        left = [i for i in range(lo + 1, hi) if i not in skipped]
        if not left:
            return Outcome("untestable", lo, hi)
        mid = (lo + hi) // 2
        pick = min(left, key=lambda i: (abs(i - mid), i))
        step += 1
        verdict = judge(commits[pick], step, step - 1 + about_steps(len(left)))
        if verdict == GOOD:
            lo = pick
        elif verdict == BAD:
            hi = pick
        elif verdict == SKIP:
            skipped.add(pick)
        else:
            return Outcome("undecided", lo, hi)
    return Outcome("found", lo, hi)
