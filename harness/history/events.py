"""Detection over the database: each series' change points, grouped per run into events
ranked by size over noise, annotated with what else changed at that run, and the
acknowledgements that silence them."""

from __future__ import annotations

import getpass
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select, update

from harness.errors import BadInput
from harness.history.db import writing
from harness.history.detection import CONFIRM_RUNS, Change, RunFigures, series_changes
from harness.history.importer import now_iso
from harness.history.schema import (
    acknowledgements,
    change_points,
    confirmations,
    confirming_samples,
    events,
    machines,
    points,
    runs,
    samples,
    series,
)

# Runs whose figures count: a failed or interrupted run is not a level.
MEASURED = ("complete", "partial")


def kind_of(change: Change, better: str | None) -> str:
    if better not in ("higher", "lower") or change.after == change.before:
        return "change"
    worse = change.after < change.before if better == "higher" else change.after > change.before
    return "regression" if worse else "improvement"


def refresh_pending(engine: Engine) -> int:
    """Run the detection for every machine's suite with a run it has not seen yet, each in
    one transaction with marking its runs seen; how many it ran for."""
    with engine.connect() as conn:
        pending = conn.execute(
            select(runs.c.machine_id, runs.c.suite).where(runs.c.detected.is_(False)).distinct()
        ).all()
    for machine_id, suite in sorted(pending):
        with writing(engine) as conn:
            refresh(conn, machine_id, suite)
            conn.execute(
                update(runs)
                .where((runs.c.machine_id == machine_id) & (runs.c.suite == suite))
                .values(detected=True)
            )
    return len(pending)


@dataclass(frozen=True)
class SuiteFigures:
    """A machine's suite as the detection reads it."""

    runs: Sequence[Any]
    """Its measured runs' rows (id, run_id, kernel, toolchains), oldest first."""
    better: dict[int, str | None]
    """series id -> its metric's direction."""
    series: dict[int, list[tuple[int, RunFigures]]]
    """series id -> (run id, figures) of each run with a point of it, oldest first."""


def suite_figures(conn: Connection, machine_id: int, suite: str) -> SuiteFigures:
    run_rows = conn.execute(
        select(runs.c.id, runs.c.run_id, runs.c.kernel, runs.c.toolchains)
        .where(
            (runs.c.machine_id == machine_id)
            & (runs.c.suite == suite)
            & runs.c.status.in_(MEASURED)
        )
        .order_by(runs.c.started_at, runs.c.run_id)
    ).all()
    order = {row.id: i for i, row in enumerate(run_rows)}
    series_rows = conn.execute(
        select(series.c.id, series.c.better).where(
            (series.c.machine_id == machine_id) & (series.c.suite == suite)
        )
    ).all()
    better = {row.id: row.better for row in series_rows}
    figures = _figures(conn, list(better), order)
    ordered = {
        series_id: sorted(by_run.items(), key=lambda item: order[item[0]])
        for series_id, by_run in figures.items()
    }
    return SuiteFigures(run_rows, better, ordered)


def refresh(conn: Connection, machine_id: int, suite: str) -> None:
    """Recompute the change points and events of one machine's suite from its whole history."""
    figures = suite_figures(conn, machine_id, suite)
    run_rows, better = figures.runs, figures.better
    series_ids = list(better)
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for series_id, ordered in figures.series.items():
        run_ids = [run_id for run_id, _ in ordered]
        for change in series_changes([figure for _, figure in ordered]):
            run_id = run_ids[change.index]
            found[run_id].append(
                {
                    "series_id": series_id,
                    "run_id": run_id,
                    "method": change.method,
                    "before": change.before,
                    "after": change.after,
                    "change": change.change,
                    "noise": change.noise,
                    "p_value": change.p_value,
                    "kind": kind_of(change, better[series_id]),
                }
            )
    if series_ids:
        conn.execute(delete(change_points).where(change_points.c.series_id.in_(series_ids)))
    run_ids_all = [row.id for row in run_rows]
    existing = dict(
        conn.execute(
            select(events.c.run_id, events.c.id).where(events.c.run_id.in_(run_ids_all))
        ).all()
    )
    stale = [event_id for run_id, event_id in existing.items() if run_id not in found]
    if stale:
        conn.execute(delete(events).where(events.c.id.in_(stale)))
    annotations = _annotations(run_rows)
    rows: list[dict[str, Any]] = []
    for run_id, changes in found.items():
        score = max(abs(c["change"]) / c["noise"] for c in changes)
        notes = json.dumps(annotations.get(run_id, []))
        if run_id in existing:
            event_id = existing[run_id]
            conn.execute(
                update(events).where(events.c.id == event_id).values(score=score, annotations=notes)
            )
        else:
            key = conn.execute(
                insert(events).values(run_id=run_id, score=score, annotations=notes)
            ).inserted_primary_key
            assert key is not None
            event_id = int(key[0])
        rows.extend(change | {"event_id": event_id} for change in changes)
    if rows:
        conn.execute(insert(change_points), rows)


def _figures(
    conn: Connection, series_ids: list[int], order: dict[int, int]
) -> dict[int, dict[int, RunFigures]]:
    """series id -> run id -> its median and repeats, for the measured runs."""
    medians: dict[int, tuple[int, int, float]] = {}
    query = select(points.c.id, points.c.series_id, points.c.run_id, points.c.median).where(
        points.c.series_id.in_(series_ids) & points.c.run_id.in_(list(order))
    )
    for point_id, series_id, run_id, median in conn.execute(query):  # unpacked: 10^5 rows
        medians[point_id] = (series_id, run_id, median)
    # Only the newest-run test reads repeats: those of the last runs and the one before.
    recent = sorted(order, key=order.__getitem__)[-(CONFIRM_RUNS + 1) :]
    repeats: dict[int, list[float]] = defaultdict(list)
    sample_query = (
        select(samples.c.point_id, samples.c.value)
        .join(points, points.c.id == samples.c.point_id)
        .where(points.c.series_id.in_(series_ids) & points.c.run_id.in_(recent))
        .order_by(samples.c.point_id, samples.c.repeat)
    )
    for point_id, value in conn.execute(sample_query):
        repeats[point_id].append(value)
    confirming = _confirming(conn, series_ids, recent)
    out: dict[int, dict[int, RunFigures]] = defaultdict(dict)
    for point_id, (series_id, run_id, median) in medians.items():
        extra = confirming.get((series_id, run_id), [])
        out[series_id][run_id] = RunFigures(median, repeats.get(point_id, []), extra)
    return out


def _confirming(
    conn: Connection, series_ids: list[int], run_ids: list[int]
) -> dict[tuple[int, int], list[float]]:
    """(series id, run id) -> the repeats of the measured runs that confirmed that run."""
    found: dict[tuple[int, int], list[float]] = defaultdict(list)
    query = (
        select(confirming_samples.c.series_id, confirmations.c.run_id, confirming_samples.c.value)
        .join(confirmations, confirmations.c.id == confirming_samples.c.confirmation_id)
        .where(
            confirming_samples.c.series_id.in_(series_ids)
            & confirmations.c.run_id.in_(run_ids)
            & confirmations.c.status.in_(MEASURED)
        )
        .order_by(confirmations.c.id, confirming_samples.c.repeat)
    )
    for series_id, run_id, value in conn.execute(query):
        found[(series_id, run_id)].append(value)
    return found


def _annotations(run_rows: Sequence[Any]) -> dict[int, list[str]]:
    """run id -> what changed since the run before it: kernel, toolchains."""
    notes: dict[int, list[str]] = {}
    for before, after in pairwise(run_rows):
        lines = []
        if before.kernel != after.kernel:
            lines.append(f"kernel {before.kernel} -> {after.kernel}")
        old = json.loads(before.toolchains or "{}")
        new = json.loads(after.toolchains or "{}")
        for tool in sorted(set(old) | set(new)):
            if old.get(tool) != new.get(tool):
                lines.append(f"{tool}: {old.get(tool)} -> {new.get(tool)}")
        if lines:
            notes[after.id] = lines
    return notes


def acknowledge(conn: Connection, event_id: int, reason: str) -> str:
    """Acknowledge an event (by its id); its run, as "<run id> on <machine>" (two machines
    may have runs of one id)."""
    row = conn.execute(
        select(events.c.run_id, runs.c.run_id.label("name"), machines.c.hostname)
        .join(runs, runs.c.id == events.c.run_id)
        .join(machines, machines.c.id == runs.c.machine_id)
        .where(events.c.id == event_id)
    ).first()
    if row is None:
        raise BadInput(f"no event {event_id} (harness history regressions lists them)")
    if not reason.strip():
        raise BadInput("--reason: say why the change is expected")
    values = {
        "reason": reason,
        "acknowledged_at": now_iso(),
        "acknowledged_by": getpass.getuser(),
    }
    done = conn.execute(
        update(acknowledgements).where(acknowledgements.c.run_id == row.run_id).values(values)
    )
    if done.rowcount == 0:
        conn.execute(insert(acknowledgements).values(run_id=row.run_id, **values))
    return f"{row.name} on {row.hostname or '?'}"
