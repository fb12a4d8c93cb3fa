"""The commit range of an event's regressed series and the `harness bisect` command over it.

The good end is the commit of the series' last measured run before the event's run (a
series is one machine's), the bad end that of the event's run: the commits of the suite's
own checkout (run.json's suite_source), which for a suite of this repository is the
harness's. When a commit is unknown, measured a dirty tree, or both runs measured the same
commit, there is no command, and `reason` says why."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, and_, or_, select

from harness.history.events import MEASURED
from harness.history.schema import change_points, points, runs, series
from harness.paths import workloads_root


@dataclass(frozen=True)
class Source:
    """What a run measured: its suite's folder (None: a run.json before suite_source), the
    commit of the checkout it is in, and whether that was dirty."""

    run_id: str
    folder: str | None
    commit: str | None
    dirty: bool | None


@dataclass(frozen=True)
class SeriesRange:
    """A regressed series of an event, and how to bisect it."""

    event: int
    run_pk: int  # the event's run (runs.id)
    series_id: int
    change: float  # after / before - 1
    good: str | None
    bad: str | None
    argv: tuple[str, ...] | None  # `harness bisect ...`; None when there is none
    reason: str | None  # why there is no command

    @property
    def size(self) -> float:
        """|log(after / before)|: a halving as large as a doubling."""
        return abs(math.log1p(self.change)) if self.change > -1 else math.inf

    @property
    def command(self) -> str | None:
        return shlex.join(self.argv) if self.argv is not None else None


def event_ranges(conn: Connection, event_id: int) -> list[SeriesRange]:
    """The event's regressed series, the largest change first (empty: no regression)."""
    return _ranges(conn, change_points.c.event_id == event_id)


def all_ranges(conn: Connection) -> list[SeriesRange]:
    """The range of every regression change point, each event's largest change first."""
    return _ranges(conn, None)


def _ranges(conn: Connection, where: Any) -> list[SeriesRange]:
    query = (
        select(
            change_points.c.event_id,
            change_points.c.series_id,
            change_points.c.change,
            series.c.suite,
            series.c.strategy,
            series.c.scenario,
            series.c.params,
            series.c.metric,
            runs.c.id.label("run_pk"),
            runs.c.started_at,
            *_source_columns(),
        )
        .join(series, series.c.id == change_points.c.series_id)
        .join(runs, runs.c.id == change_points.c.run_id)
        .where(change_points.c.kind == "regression")
    )
    if where is not None:
        query = query.where(where)
    found = []
    for row in conn.execute(query):
        before = _run_before(conn, row.series_id, row.started_at, row.run_id)
        cell = (row.strategy, row.scenario, json.loads(row.params), row.metric)
        good, bad, argv, reason = bisect_command(row.suite, cell, before, _source(row))
        found.append(
            SeriesRange(
                row.event_id, row.run_pk, row.series_id, row.change, good, bad, argv, reason
            )
        )
    return sorted(found, key=lambda r: (r.event, -r.size, r.series_id))


def _source_columns() -> tuple[Any, ...]:
    return (
        runs.c.run_id,
        runs.c.suite_folder,
        runs.c.suite_commit,
        runs.c.suite_dirty,
        runs.c.git_commit,
        runs.c.git_dirty,
    )


def _source(row: Any) -> Source:
    """A run's source; a run.json before suite_source has the harness's checkout only, which
    is the suite's when the suite is one of this repository's (the caller checks)."""
    if row.suite_folder is not None:
        return Source(row.run_id, row.suite_folder, row.suite_commit, row.suite_dirty)
    return Source(row.run_id, None, row.git_commit, row.git_dirty)


def _run_before(conn: Connection, series_id: int, started_at: str, run_id: str) -> Source | None:
    """The series' last measured run before the one started at `started_at`."""
    earlier = or_(
        runs.c.started_at < started_at,
        and_(runs.c.started_at == started_at, runs.c.run_id < run_id),
    )
    row = conn.execute(
        select(*_source_columns())
        .join(points, points.c.run_id == runs.c.id)
        .where((points.c.series_id == series_id) & runs.c.status.in_(MEASURED) & earlier)
        .order_by(runs.c.started_at.desc(), runs.c.run_id.desc())
        .limit(1)
    ).first()
    return _source(row) if row is not None else None


Cell = tuple[str, str, dict[str, Any], str]  # strategy, scenario, params, metric


def bisect_command(
    suite: str, cell: Cell, good: Source | None, bad: Source
) -> tuple[str | None, str | None, tuple[str, ...] | None, str | None]:
    """(good commit, bad commit, the command's argv, None), or the commits known, None and
    why there is no command."""
    if good is None:
        return None, bad.commit, None, f"no run before {bad.run_id} in this series"
    problem = _unknown_ends(good, bad)
    target = None
    if problem is None:
        target, problem = _target(suite, good, bad)
    if target is None or good.commit is None or bad.commit is None:
        return good.commit, bad.commit, None, problem
    strategy, scenario, params, metric = cell
    argv = ["harness", "bisect", target, "--good", good.commit, "--bad", bad.commit]
    argv += _option("--strategies", strategy) + _option("--scenario", scenario)
    for key, value in params.items():
        argv += _option("--param", f"{key}={_param_text(value)}")
    argv += _option("--metric", metric)
    return good.commit, bad.commit, tuple(argv), None


def _unknown_ends(good: Source, bad: Source) -> str | None:
    """Why the two runs' commits are not a range to bisect, or None when they are."""
    for run in (good, bad):
        if run.commit is None:
            return f"run {run.run_id} has no commit: its suite was not in a git working tree"
        if run.dirty is None:
            return f"run {run.run_id}: whether its working tree was dirty is unknown"
        if run.dirty:
            return (
                f"run {run.run_id} measured a dirty working tree: its commit "
                f"{run.commit[:12]} is not all it measured"
            )
    if good.commit == bad.commit:
        return (
            f"runs {good.run_id} and {bad.run_id} measured the same commit "
            f"{str(bad.commit)[:12]}: the change is not in the code (kernel, machine, load)"
        )
    return None


def _target(suite: str, good: Source, bad: Source) -> tuple[str | None, str | None]:
    """TARGET: the suite's name for one of this repository, else its folder; or why none."""
    own = workloads_root() / suite
    if bad.folder is None or good.folder is None:
        if (own / "suite.toml").is_file():
            return suite, None
        run = bad if bad.folder is None else good
        return None, (
            f"run {run.run_id} does not record its suite's folder (a run.json of an older "
            "harness), and no suite of this repository is named so"
        )
    if good.folder != bad.folder:
        return None, (
            f"runs {good.run_id} and {bad.run_id} measured the suite in two folders "
            f"({good.folder}, {bad.folder})"
        )
    if Path(bad.folder) == own.resolve():
        return suite, None
    return bad.folder, None


def _option(name: str, value: str) -> list[str]:
    """`--name value`, or `--name=value` for a value an option parser would take for one."""
    return [f"{name}={value}"] if value.startswith("-") else [name, value]


def _param_text(value: Any) -> str:
    """A parameter's value as --param takes it (true/false for a boolean)."""
    return json.dumps(value) if isinstance(value, bool) else str(value)
