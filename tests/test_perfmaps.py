"""The perf maps the harness removes after a repeat: only those of the workload's own
processes (in its session when it was ready), once they are gone, and only the maps they
wrote (a regular file of their user, written since they started)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.run import perfmaps

pytestmark = pytest.mark.unit


@pytest.fixture
def map_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(perfmaps, "MAP_DIR", tmp_path)
    return tmp_path


@pytest.fixture
def workload() -> Iterator[subprocess.Popen[bytes]]:
    """A process in a session of its own, as run_repeat starts a workload."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def write_map(folder: Path, pid: int) -> Path:
    path = folder / f"perf-{pid}.map"
    path.write_text("7f0000001000 40 Interpreter\n")
    return path


def gone(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()


def test_only_the_workloads_own_processes_once_gone(
    map_dir: Path, workload: subprocess.Popen[bytes]
) -> None:
    stranger = subprocess.Popen(["sleep", "600"])  # this test's session, not the workload's
    try:
        own = perfmaps.started([workload.pid, stranger.pid, os.getpid()], workload.pid)
        assert [p.pid for p in own] == [workload.pid]
        maps = {pid: write_map(map_dir, pid) for pid in (workload.pid, stranger.pid)}
        assert perfmaps.remove(own) == []  # still running
        gone(workload)
        gone(stranger)
        assert perfmaps.remove(own) == [maps[workload.pid]]
        assert maps[stranger.pid].exists()  # listed by the workload, but not its own
        assert perfmaps.remove(own) == []  # nothing twice
    finally:
        stranger.kill()
        stranger.wait()


def test_only_maps_the_process_wrote(map_dir: Path, workload: subprocess.Popen[bytes]) -> None:
    (own,) = perfmaps.started([workload.pid], workload.pid)
    gone(workload)
    path = own.map_path
    other = map_dir / "elsewhere.map"
    other.write_text("x\n")
    path.symlink_to(other)
    assert perfmaps.remove([own]) == []  # a link, not a map
    path.unlink()
    write_map(map_dir, own.pid)
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    assert perfmaps.remove([own]) == []  # older than the process: a previous one's
    os.utime(path)
    other_user = perfmaps.Started(own.pid, own.uid + 1, own.ticks)
    assert perfmaps.remove([other_user]) == []  # not its user's
    assert perfmaps.remove([own]) == [path]
    assert other.exists() and not path.exists()
