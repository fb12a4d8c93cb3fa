"""The history as the dashboard reads it: one pass over the database into plain records."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, select

from harness.dashboard.detectable import Detectable, before_latest
from harness.history import queries
from harness.history.bisect_ranges import SeriesRange, all_ranges
from harness.history.bisections import Bisection, stored
from harness.history.schema import artifacts, machines, points, runs, series


@dataclass
class Run:
    pk: int
    run_id: str
    suite: str
    machine_id: int
    status: str
    started_at: str
    git_commit: str | None
    kernel: str | None
    baseline: str | None
    run_dir: str
    report: str | None
    # The probes the run's machine could not run, and why: their figures are not in it.
    probes_missing: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str | None, str]] = field(default_factory=list)
    # The commit of the suite's own checkout (run.json suite_source), None in older runs.
    suite_commit: str | None = None

    @property
    def commit(self) -> str | None:
        """The commit measured: the suite's checkout's, else (older runs) the harness's."""
        return self.suite_commit or self.git_commit

    def probes_note(self) -> str:
        """`probes missing: futex, offwake`, or nothing when every probe ran."""
        return f"probes missing: {', '.join(self.probes_missing)}" if self.probes_missing else ""


# A series' figure of one run: (run pk, median, interval low, high).
Point = tuple[int, float, float | None, float | None]


@dataclass
class Series:
    id: int
    machine_id: int
    suite: str
    strategy: str
    scenario: str
    params: dict[str, Any]
    metric: str
    unit: str | None
    better: str | None
    points: list[Point] = field(default_factory=list)
    """(run pk, median, interval low, high), oldest run first."""
    compared_with: dict[int, str] = field(default_factory=dict)
    """Run pk -> the strategy the cell was compared with in that run (its twin, or the run's
    baseline); runs without one (the baseline's own cell) are not in it."""


@dataclass
class History:
    machines: dict[int, dict[str, Any]]
    runs: dict[int, Run]
    series: dict[int, Series]
    changes: list[dict[str, Any]]
    # Every regression change point's commit range and command, each event's largest first.
    bisect_ranges: list[SeriesRange] = field(default_factory=list)
    # (run pk, series id) -> the bisection kept for it (harness history bisect).
    bisections: dict[tuple[int, int], Bisection] = field(default_factory=dict)
    # series id -> its minimum detectable change before its latest run.
    detectable: dict[int, Detectable] = field(default_factory=dict)


def load(conn: Connection) -> History:
    machine_rows = {
        row.id: {"hostname": row.hostname, "fingerprint": row.fingerprint, "keys": row.keys}
        for row in conn.execute(select(machines))
    }
    run_rows = {
        row.id: Run(
            row.id,
            row.run_id,
            row.suite,
            row.machine_id,
            row.status,
            row.started_at,
            row.git_commit,
            row.kernel,
            row.baseline,
            row.run_dir,
            row.report,
            json.loads(row.probes_missing) if row.probes_missing else {},
            suite_commit=row.suite_commit,
        )
        for row in conn.execute(select(runs).order_by(runs.c.started_at, runs.c.run_id))
    }
    for row in conn.execute(select(artifacts).order_by(artifacts.c.id)):
        run_rows[row.run_id].files.append((row.kind, row.cell, row.path))
    all_series = {
        row.id: Series(
            row.id,
            row.machine_id,
            row.suite,
            row.strategy,
            row.scenario,
            json.loads(row.params),
            row.metric,
            row.unit,
            row.better,
        )
        for row in conn.execute(select(series).order_by(series.c.id))
    }
    order = {pk: i for i, pk in enumerate(run_rows)}
    by_series: dict[int, list[Point]] = defaultdict(list)
    query = select(
        points.c.series_id,
        points.c.run_id,
        points.c.median,
        points.c.ci_low,
        points.c.ci_high,
        points.c.baseline,
    )
    for series_id, run_id, median, low, high, baseline in conn.execute(query):
        by_series[series_id].append((run_id, median, low, high))
        if baseline is not None:
            all_series[series_id].compared_with[run_id] = baseline
    for series_id, found in by_series.items():
        all_series[series_id].points = sorted(found, key=lambda p: order[p[0]])
    changes = queries.changes(conn, ("regression", "improvement", "change"))
    return History(
        machine_rows,
        run_rows,
        all_series,
        changes,
        all_ranges(conn),
        stored(conn),
        before_latest(conn),
    )
