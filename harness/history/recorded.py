"""Each series' recorded figures: its measured runs' medians and repeats, oldest first, what
the minimum detectable change (power.py) and the bootstrap of recorded noise (resampled.py)
read."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Connection, select

from harness.history.events import MEASURED
from harness.history.schema import machines, points, runs, samples, series

# SQLite's limit on bound parameters is 32766 (999 before 3.32): a query takes this many.
CHUNK = 5000


@dataclass(frozen=True)
class RecordedSeries:
    suite: str
    strategy: str
    scenario: str
    params: dict[str, str]
    metric: str
    machine: str
    runs: int
    """Its measured runs in the history."""
    medians: list[float]
    """The medians of its last `last` measured runs, oldest first."""
    repeats: list[list[float]]
    """The repeats of those runs, each run's in their order."""
    series_id: int | None = None
    """Its id in the history (series.id): the dashboard's series/ID.html; None for one made
    up rather than read."""


def recorded_series(
    conn: Connection, *, suite: str | None = None, last: int
) -> list[RecordedSeries]:
    """Every series (of one suite, if given) with the figures of its last `last` measured
    runs, in the order suite, strategy, scenario, parameters, metric, machine."""
    query = (
        select(
            series.c.id,
            series.c.suite,
            series.c.strategy,
            series.c.scenario,
            series.c.params,
            series.c.metric,
            machines.c.hostname,
            machines.c.fingerprint,
        )
        .join(machines, machines.c.id == series.c.machine_id)
        .order_by(series.c.id)
    )
    if suite is not None:
        query = query.where(series.c.suite == suite)
    rows = conn.execute(query).all()
    figures = _figures(conn, [row.id for row in rows], last)
    out = []
    for row in rows:
        count, medians, repeats = figures.get(row.id, (0, [], []))
        out.append(
            RecordedSeries(
                suite=row.suite,
                strategy=row.strategy,
                scenario=row.scenario,
                params={k: str(v) for k, v in json.loads(row.params).items()},
                metric=row.metric,
                machine=row.hostname or row.fingerprint[:12],
                runs=count,
                medians=medians,
                repeats=repeats,
                series_id=row.id,
            )
        )
    out.sort(
        key=lambda s: (
            s.suite,
            s.strategy,
            s.scenario,
            sorted(s.params.items()),
            s.metric,
            s.machine,
        )
    )
    return out


def _figures(
    conn: Connection, series_ids: list[int], last: int
) -> dict[int, tuple[int, list[float], list[list[float]]]]:
    """series id -> its measured runs' count, and the medians and repeats of the last `last`."""
    order: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for start in range(0, len(series_ids), CHUNK):
        query = (
            select(points.c.id, points.c.series_id, points.c.median)
            .join(runs, runs.c.id == points.c.run_id)
            .where(
                points.c.series_id.in_(series_ids[start : start + CHUNK])
                & runs.c.status.in_(MEASURED)
            )
            .order_by(points.c.series_id, runs.c.started_at, runs.c.run_id)
        )
        for point_id, series_id, median in conn.execute(query):
            order[series_id].append((point_id, median))
    wanted = [point_id for kept in order.values() for point_id, _ in kept[-last:]]
    values: dict[int, list[float]] = defaultdict(list)
    for start in range(0, len(wanted), CHUNK):
        sample_query = (
            select(samples.c.point_id, samples.c.value)
            .where(samples.c.point_id.in_(wanted[start : start + CHUNK]))
            .order_by(samples.c.point_id, samples.c.repeat)
        )
        for point_id, value in conn.execute(sample_query):
            values[point_id].append(value)
    return {
        series_id: (
            len(kept),
            [median for _, median in kept[-last:]],
            [values.get(point_id, []) for point_id, _ in kept[-last:]],
        )
        for series_id, kept in order.items()
    }
