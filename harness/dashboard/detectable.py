"""A series' minimum detectable change (harness/history/power.py) as the dashboard says it,
on its series page and in its grid cell, whose change since the previous run is not
coloured while it is smaller than that.

The figure is the one before the series' latest run, from the runs before it: the latest
run's own step would count in the noise between nights power.py measures, and over a short
history hide itself (eight flat nights, then 20% down: 32% with that night, 1.2% before it,
and the detector flags the step). `harness history power` counts the latest run too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from harness.history.power import HISTORY, MAX_STEP, MIN_RUNS, Noise, min_detectable, noise_of
from harness.history.recorded import recorded_series


@dataclass(frozen=True)
class Detectable:
    """A series' minimum detectable change before its latest run."""

    runs: int  # measured runs before the latest
    repeats: int  # the latest run's repeats, at which the figure is
    noise: Noise | None  # None with fewer than MIN_RUNS runs
    step: float | None  # the night's figure; None: not known or no step up to MAX_STEP

    @property
    def least(self) -> float | None:
        """The change below which the grid does not colour: the step, MAX_STEP when no step
        up to it is flagged, None while not known (the noise floor and intervals decide)."""
        if self.noise is None:
            return None
        return self.step if self.step is not None else MAX_STEP


def before_latest(conn: Connection) -> dict[int, Detectable]:
    """Series id -> its minimum detectable change before its latest run, at that run's
    repeats."""
    out = {}
    for found in recorded_series(conn, last=HISTORY + 1):
        if found.series_id is None:
            continue
        repeats = len(found.repeats[-1]) if found.repeats else 0
        runs = max(0, found.runs - 1)
        if runs < MIN_RUNS or repeats < 1:
            out[found.series_id] = Detectable(runs, repeats, None, None)
            continue
        noise = noise_of(found.medians[:-1], found.repeats[:-1])
        out[found.series_id] = Detectable(runs, repeats, noise, min_detectable(noise, repeats, 1))
    return out


def percent(fraction: float) -> str:
    return f"{fraction:.1%}"


def cell_figures(found: Detectable | None) -> dict[str, Any]:
    """The grid cell's `least` (Detectable.least) and its line."""
    if found is None or found.least is None:
        return {"least": None, "detects": "detects: too few runs"}
    if found.step is None:
        return {"least": found.least, "detects": "detects: none up to 100%"}
    return {"least": found.least, "detects": f"detects {percent(found.step)}"}


def detectable_text(found: Detectable | None) -> str:
    """`minimum detectable change: 3.1% the night it lands (before the latest run, from its
    12 runs before: noise within runs 1.2%, between nights 0.8%; at 5 repeats a run)`, or
    why there is none."""
    if found is None or found.noise is None:
        runs = 0 if found is None else found.runs
        return (
            f"minimum detectable change: not known yet ({runs} measured runs before the "
            f"latest, {MIN_RUNS} needed)"
        )
    step = percent(found.step) if found.step is not None else "none up to 100%"
    noise = []
    if found.noise.within is not None:
        noise.append(f"within runs {percent(found.noise.within)}")
    if found.noise.between is not None:
        noise.append(f"between nights {percent(found.noise.between)}")
    return (
        f"minimum detectable change: {step} the night it lands (before the latest run, from "
        f"the {min(found.runs, HISTORY)} runs before it: noise {', '.join(noise)}; at "
        f"{found.repeats} repeats a run)"
    )
