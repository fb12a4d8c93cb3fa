"""The nightly's repeats by noise: each suite's repeats from the minimum detectable change of
its headline series (harness/history/power.py), within the bench's share of the hour.

A suite's figure is the median, over its headline metric's series on this machine, of the
smallest step the detector flags in 80% of series with that noise (POWER in power.py):
- noisy (the night's figure at its [bench] repeats above GOAL): more repeats, the fewest that
  bring it to GOAL, else MAX_REPEATS when they bring it down by a tenth at least (when the
  noise is between nights, more repeats a night do not: it keeps its repeats);
- quiet (its figure within three nights at QUIET_REPEATS under GOAL, and the night's at its
  repeats too): QUIET_REPEATS. Mann-Whitney cannot set 3 repeats apart from 3 at alpha, so
  the night's move past the floor is decided by the confirming run (harness history
  confirm), whose repeats are pooled with the night's;
- else, and without a history of the suite here: its [bench] repeats.
The extra repeats are then taken back, a repeat at a time from the suite whose repeat costs
most, until the plan fits the bench's share; then, if it still does not fit, the repeats that
buy nothing: those of a suite whose noise is between nights, down to QUIET_REPEATS (its
night's moves decided by the confirming runs, as a quiet suite's). A plan that still does not
fit says by how much.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from harness.run.estimate import clock, planned_s
from harness.run.plan import Plan

GOAL = 0.03
"""The change the nightly should see on every series: the issue's 3% step."""
QUIET_REPEATS = 3
MAX_REPEATS = 10
WIDTH = 100  # the plan's lines fit a terminal of 100 columns
GAIN = 0.9
"""More repeats for a noisy suite that cannot reach GOAL only if its figure falls below 90%."""

Figure = Callable[[int, int], float | None]
"""(repeats, nights) -> the suite's minimum detectable change (None: none up to 100%)."""


@dataclass(frozen=True)
class Allotted:
    suite: str
    repeats: int
    why: str


def allot_repeats(
    plans: Sequence[Plan], figures: Mapping[str, Figure], budget_s: float
) -> tuple[list[Plan], list[Allotted], float]:
    """The plans with their repeats, what each suite got and why, and the seconds the plan
    is over `budget_s` (0 when it fits)."""
    chosen: dict[str, tuple[int, str, bool]] = {}
    for plan in plans:
        figure = figures.get(plan.suite.name)
        chosen[plan.suite.name] = (
            _by_noise(plan.repeats, figure)
            if figure is not None
            else (plan.repeats, "no history of it on this machine: its [bench] repeats", False)
        )
    out = [replace(plan, repeats=chosen[plan.suite.name][0]) for plan in plans]
    base = {plan.suite.name: plan.repeats for plan in plans}
    trimmed: set[str] = set()
    while (total := sum(planned_s(p) for p in out)) > budget_s:
        extra = [i for i, p in enumerate(out) if p.repeats > base[p.suite.name]] or [
            i for i, p in enumerate(out) if chosen[p.suite.name][2] and p.repeats > QUIET_REPEATS
        ]
        if not extra:
            break
        i = max(extra, key=lambda j: planned_s(out[j]) / out[j].repeats)
        out[i] = replace(out[i], repeats=out[i].repeats - 1)
        trimmed.add(out[i].suite.name)
    allotted = []
    for plan in out:
        name = plan.suite.name
        why = chosen[name][1]
        if name in trimmed:
            why += f"; {plan.repeats} to fit the bench's {clock(budget_s)}"
        allotted.append(Allotted(name, plan.repeats, why))
    return out, allotted, max(0.0, total - budget_s)


def _by_noise(repeats: int, figure: Figure) -> tuple[int, str, bool]:
    """The repeats, why, and whether fewer would cost it nothing (noise between nights)."""
    night = figure(repeats, 1)
    if night is not None and night <= GOAL:
        later = figure(QUIET_REPEATS, 3) if repeats > QUIET_REPEATS else None
        if later is not None and later <= GOAL:
            return (
                QUIET_REPEATS,
                f"quiet: {_pct(night)} the night at {repeats} repeats; at {QUIET_REPEATS}, "
                f"{_pct(later)} within three nights, the night's moves decided by the "
                "confirming runs",
                False,
            )
        return repeats, f"within the goal: {_pct(night)} the night at {repeats} repeats", False
    for more in range(repeats + 1, MAX_REPEATS + 1):
        reached = figure(more, 1)
        if reached is not None and reached <= GOAL:
            return (
                more,
                f"noisy: {_pct(night)} the night at {repeats} repeats, {_pct(reached)} at {more}",
                False,
            )
    most = figure(MAX_REPEATS, 1)
    if most is not None and (night is None or most <= GAIN * night):
        return (
            MAX_REPEATS,
            f"noisy: {_pct(night)} the night at {repeats} repeats, {_pct(most)} at {MAX_REPEATS}",
            False,
        )
    return (
        repeats,
        f"noisy: {_pct(night)} the night at {repeats} repeats and {_pct(most)} at "
        f"{MAX_REPEATS}: its noise is between nights, more repeats a night do not help",
        True,
    )


def _pct(value: float | None) -> str:
    return "over 100%" if value is None else f"{value:.1%}"


def allotment_lines(allotted: Sequence[Allotted], over_s: float, budget_s: float) -> list[str]:
    """What each suite got and why, for the plan's printout."""
    lines = [f"  repeats by noise (goal: a {GOAL:.0%} change seen the night it lands):"]
    width = max((len(a.suite) for a in allotted), default=0)
    for a in allotted:
        head = f"    {a.suite:<{width}}  {a.repeats:>2}  "
        lines += textwrap.wrap(a.why, WIDTH, initial_indent=head, subsequent_indent=" " * len(head))
    if over_s > 0:
        lines.append(
            f"  over the bench's {clock(budget_s)} by {clock(over_s)}, with no extra repeats "
            "left to take back"
        )
    return lines
