"""Which changes of the newest runs a confirming run must decide, and what it decided.

A candidate is a series whose newest run moved past its noise floor from the previous good
run (detection.provisional): the newest-run test alone would raise or miss an alarm on the
repeats of one night. The nightly runs its cell again, interleaved with its baseline cell
(`harness history confirm`), and the import records those repeats apart from the series'
points; the detection then pools them with the night's, and the change holds (a change point,
an event) or is dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection, select

from harness.history.detection import Change, provisional
from harness.history.events import MEASURED, suite_figures
from harness.history.schema import change_points, confirmations, runs, series


@dataclass(frozen=True)
class Candidate:
    series_id: int
    run_pk: int
    run_id: str  # the newest run, whose move it is
    run_dir: str
    started_at: str  # when that run started (UTC, ISO 8601)
    suite: str
    strategy: str
    scenario: str
    params: dict[str, Any]
    metric: str
    change: Change
    repeats: int  # the night's repeats of the series

    @property
    def score(self) -> float:
        """The move over its noise floor: the larger, the sooner it is confirmed."""
        return abs(self.change.change) / self.change.noise

    @property
    def cell_label(self) -> str:
        shown = " ".join(f"{k}={v}" for k, v in self.params.items())
        return " ".join(filter(None, [self.suite, self.strategy, self.scenario, shown]))

    @property
    def label(self) -> str:
        return f"{self.cell_label} {self.metric}"


@dataclass(frozen=True)
class Verdict:
    candidate: Candidate
    held: bool
    pooled: float | None
    """The change of the night's and the confirming repeats pooled (their median against the
    level before); None without confirming repeats of the series."""
    event_id: int | None


def candidates(conn: Connection, machine_id: int) -> list[Candidate]:
    """The provisional moves of each suite's newest measured run on the machine that no run
    has confirmed yet, largest over noise first."""
    suites = conn.execute(
        select(runs.c.suite).where(runs.c.machine_id == machine_id).distinct()
    ).scalars()
    found: list[Candidate] = []
    for suite in sorted(suites):
        figures = suite_figures(conn, machine_id, suite)
        if not figures.runs:
            continue
        newest = figures.runs[-1]
        if _confirmed(conn, newest.id):
            continue
        for series_id, ordered in figures.series.items():
            if ordered[-1][0] != newest.id:
                continue
            change = provisional([figure for _, figure in ordered])
            if change is not None:
                repeats = len(ordered[-1][1].samples)
                found.append(_candidate(conn, series_id, newest.id, change, repeats))
    return sorted(found, key=lambda c: -c.score)


def _confirmed(conn: Connection, run_pk: int) -> bool:
    query = select(confirmations.c.id).where(
        (confirmations.c.run_id == run_pk) & confirmations.c.status.in_(MEASURED)
    )
    return conn.execute(query).first() is not None


def _candidate(
    conn: Connection, series_id: int, run_pk: int, change: Change, repeats: int
) -> Candidate:
    row = conn.execute(
        select(
            series.c.suite,
            series.c.strategy,
            series.c.scenario,
            series.c.params,
            series.c.metric,
            runs.c.run_id,
            runs.c.run_dir,
            runs.c.started_at,
        )
        .select_from(series)
        .join(runs, runs.c.id == run_pk)
        .where(series.c.id == series_id)
    ).one()
    return Candidate(
        series_id=series_id,
        run_pk=run_pk,
        run_id=row.run_id,
        run_dir=row.run_dir,
        started_at=row.started_at,
        suite=row.suite,
        strategy=row.strategy,
        scenario=row.scenario,
        params=json.loads(row.params),
        metric=row.metric,
        change=change,
        repeats=repeats,
    )


def verdicts(conn: Connection, machine_id: int, asked: list[Candidate]) -> list[Verdict]:
    """What the detection made of each candidate once its confirming repeats are in: held (a
    change point at its run, in an event) or dropped."""
    out = []
    by_suite: dict[str, Any] = {}
    for candidate in asked:
        if candidate.suite not in by_suite:
            by_suite[candidate.suite] = suite_figures(conn, machine_id, candidate.suite)
        ordered = dict(by_suite[candidate.suite].series.get(candidate.series_id, []))
        night = ordered.get(candidate.run_pk)
        pooled = None
        if night is not None and night.confirming:
            level = float(np.median([*night.samples, *night.confirming]))
            pooled = level / candidate.change.before - 1 if candidate.change.before else None
        event = conn.execute(
            select(change_points.c.event_id).where(
                (change_points.c.series_id == candidate.series_id)
                & (change_points.c.run_id == candidate.run_pk)
            )
        ).scalar()
        out.append(Verdict(candidate, event is not None, pooled, event))
    return out
