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
    ("url", "problem", "command"),
    [
        ("postgresql+psycopg://bench@db:notaport/harness", "not a database URL", "list"),
        ("postgresql+psycopg://bench@[::1/harness", "not a database URL", "list"),
        ("mongodb://bench@db/harness", "not a database URL", "list"),
        ("mysql://x", "does not support mysql://", "list"),
        ("mysql+pymysql://bench@db/harness", "does not support mysql+pymysql://", "import"),
        ("postgresql+asyncpg://bench@db/harness", "does not support", "list"),
        ("sqlite+pysqlcipher:///{tmp}/h.sqlite", "does not support", "import"),
        ("not a url", "not a database URL", "import"),
        ("sqlite:///{tmp}/file/history.sqlite", "not a folder", "import"),
        ("sqlite:////proc/no-such-process/history.sqlite", "No such file or directory", "import"),
    ],
)
def test_a_bad_database_url_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, problem: str, command: str
) -> None:
    (tmp_path / "file").write_text("a file, not a folder")
    code, _, err = harness(["history", command, "--db", url.format(tmp=tmp_path)], capsys)
    assert code == 2
    assert err.startswith("harness: error: --db ") and err.count("\n") == 1, err
    assert problem in err
    if "not a database URL" in problem or "support" in problem:
        assert "sqlite:///PATH or postgresql" in err
    assert os.listdir(tmp_path) == ["file"]


def test_an_unsupported_harness_db_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_DB", "mysql://x")
    code, _, err = harness(["history", "list"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("harness: error: $HARNESS_DB 'mysql://x': not a database URL"), err


READERS = {
    "list": ["history", "list"],
    "regressions": ["history", "regressions"],
    "export": ["history", "export"],
    "ack": ["history", "ack", "1", "--reason", "expected"],
}


@pytest.mark.parametrize("command", [*READERS, "dashboard"])
def test_a_missing_sqlite_database_is_refused_by_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A mistyped path is not an empty history: nothing created (not even its folders), and
    an existing dashboard is left as it was."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("the last good overview")
    url = f"sqlite:///{tmp_path / 'missing' / 'dir' / 'h.sqlite'}"
    args = READERS.get(command, ["dashboard", "--out", str(site)])
    code, out, err = harness([*args, "--db", url], capsys)
    assert (code, out) == (2, "")
    no_history = "no history database there (harness history import creates one)"
    assert err == f"harness: error: --db {url}: {no_history}\n"
    assert sorted(os.listdir(tmp_path)) == ["site"]
    assert (site / "index.html").read_text() == "the last good overview"


def test_an_empty_file_is_refused_and_import_creates_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "h.sqlite"
    url = f"sqlite:///{db}"
    code, _, _ = harness(
        ["history", "import", "--db", url, str(night(tmp_path / "runs", 0))], capsys
    )
    assert code == 0 and db.is_file()
    assert len(run_ids(url, capsys)) == 1
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    code, _, err = harness(["history", "regressions", "--db", f"sqlite:///{empty}"], capsys)
    assert code == 2 and "no history database there" in err
    assert empty.stat().st_size == 0
