"""The history database on SQLite and on a real PostgreSQL server: import (idempotent,
atomic, refusing bad files, concurrent), regressions at the right run, acknowledgements,
export; both backends report the same regressions.

The SQLite cases are unit tests; those on PostgreSQL start a server (tests/historydb.py), so
they are e2e, like the tests of the workloads make deps builds."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from conftest import HARNESS
from historydb import create_database
from historyruns import harness, write_night
from sqlalchemy import create_engine, func, select, text

from harness.history import events, importer
from harness.history.db import MIGRATIONS, connect
from harness.history.schema import metadata, points, runs

STEP_NIGHT = 12
NIGHTS = 16


def stepped_history(root: Path) -> list[Path]:
    """16 nights; at night 12 tokio-timeout drops 10% and the kernel changes."""
    rng = np.random.default_rng(7)
    dirs = []
    for night in range(NIGHTS):
        drop = 0.9 if night >= STEP_NIGHT else 1.0
        levels = {("none", 64): 1000.0, ("tokio-timeout", 64): 2000.0 * drop}
        kernel = "6.9.0" if night >= STEP_NIGHT else "6.8.0"
        dirs.append(write_night(root, night, levels, rng, kernel=kernel))
    return dirs


def regressions(db_url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any]]:
    code, out, _ = harness(["history", "regressions", "--json", "--db", db_url], capsys)
    return code, json.loads(out)


def test_a_step_is_reported_at_its_run_and_acknowledged(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = stepped_history(tmp_path / "runs")
    code, out, _ = harness(["history", "import", "--db", db_url, *map(str, dirs)], capsys)
    assert code == 0 and f"{NIGHTS} imported" in out
    code, found = regressions(db_url, capsys)
    assert code == 1
    assert len(found) == 1
    (regression,) = found
    assert regression["strategy"] == "tokio-timeout"
    assert regression["params"] == {"concurrency": 64}
    assert regression["metric"] == "ops_per_sec"
    assert regression["run_id"] == dirs[STEP_NIGHT].name
    assert regression["change"] == pytest.approx(-0.1, abs=0.02)
    assert regression["status"] == "open"
    assert regression["annotations"] == ["kernel 6.8.0 -> 6.9.0"]
    assert {"suite", "scenario", "before", "after"} <= set(regression)

    code, out, _ = harness(
        ["history", "ack", str(regression["event"]), "--reason", "expected", "--db", db_url],
        capsys,
    )
    assert code == 0
    assert regressions(db_url, capsys) == (0, [])
    # A later import recomputes the events; the acknowledgement stays.
    harness(["history", "import", "--db", db_url, str(dirs[-1])], capsys)
    more = write_night(tmp_path / "runs", NIGHTS, {("none", 64): 1000.0}, np.random.default_rng(1))
    harness(["history", "import", "--db", db_url, str(more)], capsys)
    assert regressions(db_url, capsys)[0] == 0


@pytest.mark.e2e
def test_sqlite_and_postgresql_agree(
    tmp_path: Path, postgres: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = stepped_history(tmp_path / "runs")
    urls = [f"sqlite:///{tmp_path / 'h.sqlite'}", create_database(postgres, "agree")]
    reports = []
    for url in urls:
        harness(["history", "import", "--db", url, *map(str, dirs)], capsys)
        _, found = regressions(url, capsys)
        reports.append(
            [{k: v for k, v in r.items() if k not in ("id", "event", "series_id")} for r in found]
        )
    assert reports[0] == reports[1]
    assert reports[0]


def test_importing_twice_changes_nothing(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = stepped_history(tmp_path / "runs")[:3]
    harness(["history", "import", "--db", db_url, *map(str, dirs)], capsys)
    code, out, _ = harness(["history", "import", "--db", db_url, *map(str, dirs)], capsys)
    assert code == 0 and "0 imported, 0 updated, 3 unchanged, 0 still running, 0 refused" in out
    with connect(db_url).connect() as conn:
        assert conn.execute(select(func.count()).select_from(runs)).scalar() == 3
        assert conn.execute(select(func.count()).select_from(points)).scalar() == 6


def test_an_interrupted_import_leaves_nothing(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (first,) = stepped_history(tmp_path / "runs")[:1]

    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(importer, "_write_artifacts", interrupted)
    engine = connect(db_url)
    with pytest.raises(KeyboardInterrupt):
        importer.import_run(engine, first)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(runs)).scalar() == 0
        assert conn.execute(select(func.count()).select_from(points)).scalar() == 0
    monkeypatch.undo()
    assert importer.import_run(engine, first).outcome == "imported"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"schema_version": 2, "cells": [', "not valid JSON"),
        ('{"results": []}', "not a harness run.json"),
        ('{"schema_version": 9, "cells": []}', "schema_version 9"),
    ],
)
def test_a_truncated_or_foreign_run_json_is_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    bad = tmp_path / "runs" / "bad"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text(content)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    code, _, err = harness(["history", "import", "--db", url, str(bad)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and problem in err


@pytest.mark.unit
def test_export_has_every_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirs = stepped_history(tmp_path / "runs")[:2]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    harness(["history", "import", "--db", url, *map(str, dirs)], capsys)
    _, out, _ = harness(["history", "export", "--format", "jsonl", "--db", url], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 4 and rows[0]["params"] == {"concurrency": 64}
    _, out, _ = harness(["history", "export", "--format", "csv", "--db", url], capsys)
    assert (
        out.splitlines()[0].startswith("run_id,started_at,machine") and len(out.splitlines()) == 5
    )


def test_migrations_create_exactly_the_schema(db_url: str) -> None:
    engine = connect(db_url)
    with engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    assert differences == []


def test_a_detection_interrupted_after_the_import_runs_at_the_next_import(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = stepped_history(tmp_path / "runs")

    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(events, "refresh", interrupted)
    code, _, _ = harness(["history", "import", "--db", db_url, *map(str, dirs)], capsys)
    assert code == 130
    monkeypatch.undo()
    code, out, _ = harness(["history", "import", "--db", db_url, *map(str, dirs)], capsys)
    assert code == 0 and f"{NIGHTS} unchanged" in out
    code, found = regressions(db_url, capsys)
    assert code == 1 and [r["run_id"] for r in found] == [dirs[STEP_NIGHT].name]


def test_concurrent_imports_of_the_same_runs_all_succeed(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three processes import the same runs into a new database at once: each run is imported
    by one of them and found unchanged by the others, and the history is as after one."""
    dirs = stepped_history(tmp_path / "runs")
    argv = [*HARNESS, "history", "import", "--db", db_url, *map(str, dirs)]
    imports = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    imported = 0
    for process in imports:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0 and err == "", err
        counts = re.fullmatch(
            r"history: (\d+) imported, 0 updated, (\d+) unchanged, 0 still running, "
            r"0 refused\n",
            out,
        )
        assert counts is not None, out
        assert int(counts[1]) + int(counts[2]) == NIGHTS
        imported += int(counts[1])
    assert imported == NIGHTS
    with connect(db_url).connect() as conn:
        assert conn.execute(select(func.count()).select_from(runs)).scalar() == NIGHTS
        assert conn.execute(select(func.count()).select_from(points)).scalar() == 2 * NIGHTS
    code, found = regressions(db_url, capsys)
    assert code == 1 and [r["run_id"] for r in found] == [dirs[STEP_NIGHT].name]


def test_two_machines_keep_their_runs_of_one_run_id(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two machines of a fleet started in the same second: one run id, two runs."""
    levels = {("none", 64): 1000.0}
    first = write_night(tmp_path / "vm", 0, levels, np.random.default_rng(1), hostname="vm")
    second = write_night(tmp_path / "b", 0, levels, np.random.default_rng(2), hostname="machine-b")
    assert first.name == second.name
    for folder, counts in ((first, "1 imported, 0 updated"), (second, "1 imported, 0 updated")):
        code, out, err = harness(["history", "import", "--db", db_url, str(folder)], capsys)
        assert code == 0 and counts in out, (out, err)
    code, out, _ = harness(["history", "import", "--db", db_url, str(first)], capsys)
    assert code == 0 and "0 imported, 0 updated, 1 unchanged" in out
    code, out, _ = harness(["history", "list", "--db", db_url], capsys)
    assert [line.split()[:3] for line in out.splitlines()[1:]] == [
        [first.name, "timers", "machine-b"],
        [first.name, "timers", "vm"],
    ]
    code, out, _ = harness(["history", "export", "--format", "jsonl", "--db", db_url], capsys)
    assert sorted(json.loads(line)["machine"] for line in out.splitlines()) == ["machine-b", "vm"]


def test_the_run_per_machine_migration_keeps_every_row(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A history at 0002 (run ids unique) upgraded to 0003: SQLite copies the runs table, and
    the copy must not cascade into the points, events and artifacts of its runs."""
    dirs = stepped_history(tmp_path / "runs")
    harness(["history", "import", "--db", db_url, *map(str, dirs)], capsys)
    before = table_counts(db_url)
    engine = connect(db_url)
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":  # as db.migrate does
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
        with conn.begin():
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = conn
            command.downgrade(config, "0002")
    engine.dispose()
    assert table_counts(db_url) == before  # connect() upgrades it again
    code, found = regressions(db_url, capsys)
    assert code == 1 and [r["run_id"] for r in found] == [dirs[STEP_NIGHT].name]


def table_counts(db_url: str) -> dict[str, int]:
    with connect(db_url).connect() as conn:
        return {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in metadata.sorted_tables
        }


@pytest.mark.e2e
def test_a_missing_or_empty_postgresql_database_is_refused(
    postgres: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reader of an empty database gets one line and the database stays empty (no tables
    created); one that does not exist is the server's one line."""
    empty = create_database(postgres, "empty")
    code, _, err = harness(["history", "list", "--db", empty], capsys)
    assert code == 2 and err.count("\n") == 1 and "no history database there" in err, err
    engine = create_engine(empty)
    with engine.connect() as conn:
        tables = text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert conn.execute(tables).scalar() == 0
    engine.dispose()
    code, _, err = harness(["history", "list", "--db", f"{postgres}/nosuchdb"], capsys)
    assert code == 1 and err.count("\n") == 1 and '"nosuchdb" does not exist' in err, err
