"""What the history commands and the dashboard read: runs, regressions, points."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, func, select

from harness.history.schema import (
    acknowledgements,
    change_points,
    events,
    machines,
    points,
    runs,
    series,
)

# What names a series to a reader (its machine aside), in the order the readers list it.
SERIES_KEY = (
    series.c.suite,
    series.c.strategy,
    series.c.scenario,
    series.c.params,
    series.c.metric,
    series.c.unit,
)


def run_list(conn: Connection) -> list[dict[str, Any]]:
    """Every run, oldest first, with its machine and number of points."""
    counts = (
        select(points.c.run_id, func.count().label("points")).group_by(points.c.run_id).subquery()
    )
    query = (
        select(
            runs.c.run_id,
            runs.c.suite,
            runs.c.status,
            runs.c.started_at,
            runs.c.git_commit,
            machines.c.hostname,
            machines.c.fingerprint,
            func.coalesce(counts.c.points, 0).label("points"),
        )
        .join(machines, machines.c.id == runs.c.machine_id)
        .outerjoin(counts, counts.c.run_id == runs.c.id)
        .order_by(runs.c.started_at, runs.c.run_id, machines.c.hostname, runs.c.id)
    )
    return [dict(row._mapping) for row in conn.execute(query)]


def changes(conn: Connection, kinds: tuple[str, ...] = ("regression",)) -> list[dict[str, Any]]:
    """Change points of these kinds, biggest over noise first, each with its series, run,
    event and acknowledgement."""
    query = (
        select(
            change_points.c.id,
            change_points.c.event_id,
            change_points.c.method,
            change_points.c.before,
            change_points.c.after,
            change_points.c.change,
            change_points.c.noise,
            change_points.c.p_value,
            change_points.c.kind,
            series.c.id.label("series_id"),
            *SERIES_KEY,
            series.c.better,
            runs.c.run_id,
            runs.c.started_at,
            machines.c.hostname,
            machines.c.fingerprint,
            events.c.score,
            events.c.annotations,
            acknowledgements.c.reason,
        )
        .join(series, series.c.id == change_points.c.series_id)
        .join(runs, runs.c.id == change_points.c.run_id)
        .join(machines, machines.c.id == runs.c.machine_id)
        .join(events, events.c.id == change_points.c.event_id)
        .outerjoin(acknowledgements, acknowledgements.c.run_id == runs.c.id)
        .where(change_points.c.kind.in_(kinds))
    )
    out = []
    for row in conn.execute(query):
        item = dict(row._mapping)
        item["params"] = json.loads(item["params"])
        item["annotations"] = json.loads(item["annotations"])
        item["machine"] = item.pop("hostname")
        item["event"] = item.pop("event_id")
        item["status"] = "acknowledged" if item["reason"] is not None else "open"
        out.append(item)
    out.sort(key=lambda c: (c["status"] != "open", -abs(c["change"]) / c["noise"], c["id"]))
    return out


EXPORT_COLUMNS = (
    "run_id",
    "started_at",
    "machine",
    "suite",
    "strategy",
    "scenario",
    "params",
    "metric",
    "unit",
    "median",
    "ci_low",
    "ci_high",
    "n",
)


def export_rows(conn: Connection) -> Iterator[dict[str, Any]]:
    """Every point of the history, run by run."""
    query = (
        select(
            runs.c.run_id,
            runs.c.started_at,
            machines.c.hostname.label("machine"),
            *SERIES_KEY,
            points.c.median,
            points.c.ci_low,
            points.c.ci_high,
            points.c.n,
        )
        .join(runs, runs.c.id == points.c.run_id)
        .join(series, series.c.id == points.c.series_id)
        .join(machines, machines.c.id == series.c.machine_id)
        .order_by(runs.c.started_at, runs.c.run_id, series.c.id)
    )
    for row in conn.execute(query):
        yield dict(row._mapping)
