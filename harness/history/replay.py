"""The nightly's detection replayed night by night on one series, with or without confirming
runs, for the detection's figures (scripts/bench-detection): which change points the history
showed on some night (each an event opened then, whether a later night withdrew it).

Without confirmation, night n's detection is series_changes of the runs up to n. With it, a
night whose newest run moved past its noise floor (detection.provisional) first runs that
cell again: `confirm(n)` gives the confirming repeats, recorded with run n (RunFigures.
confirming) for that night and every later one, and the detection judges the night's repeats
and them together, as the nightly's `harness history confirm` and the import do. Every
provisional move is confirmed (the nightly confirms those that fit its share of the hour,
largest over noise first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from harness.history.detection import (
    CONFIRM_RUNS,
    Change,
    RunFigures,
    provisional,
    series_changes,
)

Confirm = Callable[[int], Sequence[float]]
"""Night n -> the repeats of a confirming run of its cell."""


def replay(
    runs: Sequence[RunFigures], confirm: Confirm | None = None, first: int = 1
) -> dict[int, Change]:
    """Run index -> the change point at it, as first shown, over the nights from `first` to
    the last (night n has runs[:n + 1])."""
    history = list(runs)
    shown: dict[int, Change] = {}
    for n in range(first, len(history)):
        if confirm is not None and provisional(history[: n + 1]) is not None:
            history[n] = replace(history[n], confirming=tuple(confirm(n)))
        for change in series_changes(history[: n + 1]):
            shown.setdefault(change.index, change)
    return shown


def flagged_at_its_night(
    runs: Sequence[RunFigures], at: int, rising: bool, confirm: Confirm | None = None
) -> bool:
    """Whether the night run `at` lands shows a change point at it in that direction (the
    nights before it replayed from the first the newest-run test still judges then)."""
    found = replay(runs[: at + 1], confirm, first=max(1, at - CONFIRM_RUNS + 1)).get(at)
    return found is not None and (found.after > found.before) == rising
