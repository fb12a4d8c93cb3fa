"""Importing run directories into the history: one transaction per run, so that an
interrupted import leaves nothing of that run, and a run already imported from the same
run.json (same sha256) is left as it is."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, CursorResult, Engine, delete, insert, select, update

from harness.history.db import writing
from harness.history.fingerprint import fingerprint
from harness.history.schema import (
    artifacts,
    confirmations,
    confirming_samples,
    machines,
    points,
    runs,
    samples,
    series,
)
from harness.rundoc.files import run_file
from harness.rundoc.jsonfile import RunLoadError, load_run
from harness.rundoc.model import RunDoc
from harness.stats import flatten_metrics, params_key

Outcome = Literal["imported", "updated", "unchanged", "skipped"]
# The statuses of a confirming run whose repeats decide (events.MEASURED, which imports this).
CONFIRMING = ("complete", "partial")


@dataclass(frozen=True)
class Imported:
    run_id: str
    outcome: Outcome
    machine_id: int
    suite: str
    confirms: str | None = None  # a confirming run: the run id whose changes it decides


def cell_key(strategy: str, scenario: str, params: Mapping[str, Any]) -> str:
    """A cell's identity across runs: canonical JSON of [strategy, scenario, params]."""
    return json.dumps([strategy, scenario, dict(params)], sort_keys=True)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_dirs_under(root: Path) -> list[Path]:
    """Every run directory (a folder with a run.json) right under `root`, oldest name first."""
    if not root.is_dir():
        return []
    return sorted(path for path in root.iterdir() if (path / "run.json").is_file())


def import_run(engine: Engine, run_dir: Path) -> Imported:
    """Import one run directory (or its run.json); RunLoadError when it is not one."""
    file = run_dir / "run.json" if run_dir.is_dir() else run_dir
    doc = load_run(file)
    if doc.status == "running":
        # Still being written (or killed before it could say): the next import takes it.
        return Imported(doc.run_id, "skipped", 0, doc.suite)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    with writing(engine) as conn:
        if doc.config.confirms is not None:
            return _write_confirmation(conn, doc, file, digest)
        return _write(conn, doc, file.parent.resolve(), digest)


def _write_confirmation(conn: Connection, doc: RunDoc, file: Path, digest: str) -> Imported:
    """A confirming run (config.confirms): its repeats, per series of the confirmed run's
    suite, into confirming_samples, apart from the points; the confirmed run is detected
    again. A confirming run of a run the history does not have is refused (RunLoadError)."""
    machine_id = _machine(conn, doc)
    confirmed = conn.execute(
        select(runs.c.id).where(
            (runs.c.machine_id == machine_id) & (runs.c.run_id == doc.config.confirms)
        )
    ).scalar()
    if confirmed is None:
        raise RunLoadError(
            f"{file}: it confirms run {doc.config.confirms}, which the history does not have "
            "on this run's machine (import that run first)"
        )
    row = conn.execute(
        select(confirmations.c.id, confirmations.c.doc_sha256).where(
            (confirmations.c.run_id == confirmed) & (confirmations.c.confirming_run == doc.run_id)
        )
    ).first()
    result = Imported(doc.run_id, "unchanged", machine_id, doc.suite, doc.config.confirms)
    if row is not None and row.doc_sha256 == digest:
        return result
    values = {
        "run_id": confirmed,
        "confirming_run": doc.run_id,
        "status": doc.status,
        "run_dir": str(file.parent.resolve()),
        "doc_sha256": digest,
        "imported_at": now_iso(),
    }
    if row is None:
        confirmation = _new_id(conn.execute(insert(confirmations).values(values)))
    else:
        confirmation = int(row.id)
        conn.execute(update(confirmations).where(confirmations.c.id == confirmation).values(values))
        conn.execute(
            delete(confirming_samples).where(confirming_samples.c.confirmation_id == confirmation)
        )
    # An interrupted or failed confirming run is recorded as tried, its repeats not at all.
    ids = _series_ids(conn, doc, machine_id) if doc.status in CONFIRMING else {}
    rows = [
        {"confirmation_id": confirmation, "series_id": series_id, "repeat": i + 1, "value": value}
        for series_id, values in _repeats(doc, ids).items()
        for i, value in enumerate(values)
    ]
    if rows:
        conn.execute(insert(confirming_samples), rows)
    conn.execute(update(runs).where(runs.c.id == confirmed).values(detected=False))
    return replace(result, outcome="imported" if row is None else "updated")


def _write(conn: Connection, doc: RunDoc, run_dir: Path, digest: str) -> Imported:
    machine_id = _machine(conn, doc)
    # A run is its machine's: another machine's run of the same id is another run.
    row = conn.execute(
        select(runs.c.id, runs.c.doc_sha256).where(
            (runs.c.machine_id == machine_id) & (runs.c.run_id == doc.run_id)
        )
    ).first()
    if row is not None and row.doc_sha256 == digest:
        return Imported(doc.run_id, "unchanged", machine_id, doc.suite)
    report = run_file(run_dir, "report.html")
    values: dict[str, Any] = {
        "run_id": doc.run_id,
        "suite": doc.suite,
        "machine_id": machine_id,
        "git_commit": doc.git.commit,
        "git_dirty": doc.git.dirty,
        **_suite_source(doc),
        "started_at": doc.started_at,
        "finished_at": doc.finished_at,
        "status": doc.status,
        "baseline": doc.config.baseline,
        "kernel": doc.host.kernel,
        "toolchains": json.dumps(doc.host.toolchains, sort_keys=True)
        if doc.host.toolchains
        else None,
        "run_dir": str(run_dir),
        "report": "report.html" if report else None,
        "probes_missing": json.dumps(missing, sort_keys=True)
        if (missing := probes_missing(doc))
        else None,
        "doc_sha256": digest,
        "imported_at": now_iso(),
        "detected": False,
    }
    if row is None:
        run_pk = _new_id(conn.execute(insert(runs).values(values)))
        outcome: Outcome = "imported"
    else:
        run_pk = int(row.id)
        conn.execute(update(runs).where(runs.c.id == run_pk).values(values))
        point_ids = select(points.c.id).where(points.c.run_id == run_pk)
        conn.execute(delete(samples).where(samples.c.point_id.in_(point_ids)))
        conn.execute(delete(points).where(points.c.run_id == run_pk))
        conn.execute(delete(artifacts).where(artifacts.c.run_id == run_pk))
        outcome = "updated"
    _write_points(conn, doc, machine_id, run_pk)
    _write_artifacts(conn, doc, run_dir, run_pk)
    return Imported(doc.run_id, outcome, machine_id, doc.suite)


def _suite_source(doc: RunDoc) -> dict[str, Any]:
    source = doc.suite_source
    return {
        "suite_folder": source.folder if source else None,
        "suite_commit": source.commit if source else None,
        "suite_dirty": source.dirty if source else None,
    }


def probes_missing(doc: RunDoc) -> dict[str, str]:
    """The probes that could not run on the run's machine, and why: as the run recorded them,
    or in an older run.json those unavailable in a cell."""
    if doc.config.probes_unavailable is not None:
        return dict(doc.config.probes_unavailable)
    return {
        name: probe.unavailable
        for cell in doc.cells
        for name, probe in cell.probes.items()
        if probe.unavailable
    }


def _machine(conn: Connection, doc: RunDoc) -> int:
    print_ = fingerprint(doc.host)
    found = conn.execute(
        select(machines.c.id).where(machines.c.fingerprint == print_.digest)
    ).scalar()
    if found is not None:
        return int(found)
    return _new_id(
        conn.execute(
            insert(machines).values(
                fingerprint=print_.digest, hostname=doc.host.hostname, keys=print_.canonical
            )
        )
    )


def _new_id(result: CursorResult[Any]) -> int:
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def _series_ids(conn: Connection, doc: RunDoc, machine_id: int) -> dict[tuple[str, ...], int]:
    """(strategy, scenario, params, metric) -> series id, creating the missing series."""
    where = (series.c.machine_id == machine_id) & (series.c.suite == doc.suite)
    columns = (series.c.strategy, series.c.scenario, series.c.params, series.c.metric)
    known = {
        tuple(r[1:]): int(r[0]) for r in conn.execute(select(series.c.id, *columns).where(where))
    }
    declared = {metric.name: metric for metric in doc.metrics}
    missing = []
    for cell in doc.cells:
        for name in cell.summary:
            key = (cell.strategy, cell.scenario, params_key(cell.params), name)
            if name in declared and key not in known:
                metric = declared[name]
                better = metric.better if metric.better in ("higher", "lower") else None
                missing.append(
                    {
                        "machine_id": machine_id,
                        "suite": doc.suite,
                        "strategy": key[0],
                        "scenario": key[1],
                        "params": key[2],
                        "metric": name,
                        "unit": metric.unit,
                        "better": better,
                    }
                )
                known[key] = -1
    if missing:
        conn.execute(insert(series), missing)
        known = {
            tuple(r[1:]): int(r[0])
            for r in conn.execute(select(series.c.id, *columns).where(where))
        }
    return known


def _write_points(conn: Connection, doc: RunDoc, machine_id: int, run_pk: int) -> None:
    ids = _series_ids(conn, doc, machine_id)
    rows = []
    for cell in doc.cells:
        for name, summary in cell.summary.items():
            series_id = ids.get((cell.strategy, cell.scenario, params_key(cell.params), name))
            if series_id is None:
                continue
            rows.append(
                {
                    "series_id": series_id,
                    "run_id": run_pk,
                    "median": summary.median,
                    "ci_low": _finite(summary.ci95_low),
                    "ci_high": _finite(summary.ci95_high),
                    "n": summary.n,
                    "baseline": doc.baseline_of(cell),
                }
            )
    repeats = _repeats(doc, ids)
    if not rows:
        return
    conn.execute(insert(points), rows)
    point_of = dict(
        conn.execute(select(points.c.series_id, points.c.id).where(points.c.run_id == run_pk)).all()
    )
    sample_rows = [
        {"point_id": point_of[series_id], "repeat": i + 1, "value": value}
        for series_id, values in repeats.items()
        for i, value in enumerate(values)
    ]
    if sample_rows:
        conn.execute(insert(samples), sample_rows)


def _repeats(doc: RunDoc, ids: Mapping[tuple[str, ...], int]) -> dict[int, list[float]]:
    """series id -> the values of its metric in the cell's repeats, for the cells' summary
    metrics that have a series."""
    repeats: dict[int, list[float]] = {}
    for cell in doc.cells:
        flat = [flatten_metrics(result) for result in cell.repeats]
        for name in cell.summary:
            series_id = ids.get((cell.strategy, cell.scenario, params_key(cell.params), name))
            if series_id is not None:
                repeats[series_id] = [values[name] for values in flat if name in values]
    return repeats


def _finite(value: float) -> float | None:
    return value if value == value and abs(value) != float("inf") else None


def _write_artifacts(conn: Connection, doc: RunDoc, run_dir: Path, run_pk: int) -> None:
    found: list[dict[str, Any]] = []

    def add(kind: str, cell: str | None, rel: str | None) -> None:
        if rel and run_file(run_dir, rel):
            found.append({"run_id": run_pk, "kind": kind, "cell": cell, "path": rel})

    add("report", None, "report.html")
    add("summary", None, "summary.md")
    for cell in doc.cells:
        profile = cell.profile
        key = cell_key(cell.strategy, cell.scenario, cell.params)
        add("flame", key, profile.svg)
        add("diff_flame", key, profile.diff_svg)
        add("offcpu_flame", key, profile.offcpu_svg)
        add("wakeup_flame", key, profile.wakeup_svg)
    for plot in doc.plots:
        add("plot", plot.scenario, plot.path)
    if found:
        conn.execute(insert(artifacts), found)


def import_runs(engine: Engine, run_dirs: Iterable[Path]) -> tuple[list[Imported], list[str]]:
    """Each run in its own transaction; the runs imported and one line per run refused."""
    done, refused = [], []
    for run_dir in run_dirs:
        try:
            done.append(import_run(engine, run_dir))
        except RunLoadError as error:
            refused.append(str(error))
    return done, refused
