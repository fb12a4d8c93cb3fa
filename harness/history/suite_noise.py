"""Each suite's minimum detectable change on one machine, for the nightly's repeats by noise
(harness/run/noise_repeats.py): over the series of the suite's headline metric, the median
of each series' figure (harness/history/power.py) at a number of repeats and nights."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from functools import cache

from sqlalchemy import Connection

from harness.history.power import HISTORY, Noise, min_detectable, noise_of
from harness.history.recorded import recorded_series

Figure = Callable[[int, int], float | None]


def suite_figures(conn: Connection, machine: str, headline: Mapping[str, str]) -> dict[str, Figure]:
    """suite -> its figure, for the suites (suite -> headline metric) with series of known
    noise on `machine` (as power.py names machines: hostname, else the fingerprint's start)."""
    out: dict[str, Figure] = {}
    for suite, metric in headline.items():
        noises = [
            noise_of(s.medians, s.repeats)
            for s in recorded_series(conn, suite=suite, last=HISTORY)
            if s.metric == metric and s.machine == machine
        ]
        known = [n for n in noises if n.between is not None]
        if known:
            out[suite] = _figure(known)
    return out


def _figure(noises: Sequence[Noise]) -> Figure:
    @cache
    def figure(repeats: int, nights: int) -> float | None:
        found = [min_detectable(n, repeats, nights) for n in noises]
        middle = statistics.median(math.inf if v is None else v for v in found)
        return None if math.isinf(middle) else middle

    return figure
