"""A corrupt or read-only history database, and --db URLs that are not one: one line on
stderr and a non-zero exit (2 for the URL, 1 for the database), never a traceback, and
nothing written."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from conftest import HARNESS
from historydb import readonly_argv
from historyruns import harness, night, run_ids

pytestmark = pytest.mark.unit


def populated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A history of 12 runs of 20 cells each (a few hundred KiB)."""
    db = tmp_path / "h.sqlite"
    dirs = [night(tmp_path / "runs", n, cells=20) for n in range(12)]
    code, _, err = harness(
        ["history", "import", "--db", f"sqlite:///{db}", *map(str, dirs)], capsys
    )
    assert code == 0, err
    with closing(sqlite3.connect(db)) as conn:  # everything into the file, the log emptied
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def corrupt_random(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = tmp_path / "random.sqlite"
    db.write_bytes(np.random.default_rng(0).bytes(100_000))
    return db


def corrupt_middle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = populated(tmp_path, capsys)
    size = db.stat().st_size
    assert size > 3 * 40960, size
    with db.open("r+b") as file:
        file.seek(size // 2)
        file.write(np.random.default_rng(1).bytes(40960))
    return db


@pytest.mark.parametrize(
    ("make", "reason"),
    [(corrupt_random, "file is not a database"), (corrupt_middle, "malformed")],
)
@pytest.mark.parametrize("command", ["import", "list", "dashboard"])
def test_a_corrupt_database_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path, pytest.CaptureFixture[str]], Path],
    reason: str,
    command: str,
) -> None:
    db = make(tmp_path, capsys)
    url = f"sqlite:///{db}"
    args = {
        "import": ["history", "import", str(night(tmp_path / "new", 20, cells=20))],
        "list": ["history", "list"],
        "dashboard": ["dashboard", "--out", str(tmp_path / "site")],
    }[command]
    code, _, err = harness([*args, "--db", url], capsys)
    assert code == 1
    assert err.startswith(f"harness: error: history database {url}: ")
    assert err.count("\n") == 1 and reason in err, err


def test_importing_into_a_read_only_database_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = populated(tmp_path, capsys)
    before = run_ids(f"sqlite:///{db}", capsys)
    new = night(tmp_path / "new", 20)
    argv = [*HARNESS, "history", "import", "--db", f"sqlite:///{db}", str(new)]
    done = subprocess.run(
        readonly_argv([db], argv), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "readonly database" in done.stderr, done.stderr
    assert run_ids(f"sqlite:///{db}", capsys) == before


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql+psycopg://bench@db:notaport/harness", "not a database URL"),
        ("postgresql+psycopg://bench@[::1/harness", "not a database URL"),
        ("mongodb://bench@db/harness", "not a database URL"),
        ("sqlite:///{tmp}/file/history.sqlite", "not a folder"),
        ("sqlite:////proc/no-such-process/history.sqlite", "No such file or directory"),
    ],
)
def test_a_bad_database_url_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, problem: str
) -> None:
    (tmp_path / "file").write_text("a file, not a folder")
    code, _, err = harness(["history", "list", "--db", url.format(tmp=tmp_path)], capsys)
    assert code == 2
    assert err.startswith("harness: error: --db ") and err.count("\n") == 1, err
    assert problem in err
    assert os.listdir(tmp_path) == ["file"]
