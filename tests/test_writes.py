"""Honest writes: a 2 MiB tmpfs as --out at three fill levels, a run directory removed
mid-run, `harness report` on a read-only run. Each ends in one line naming the path and the
error, the right exit code, no traceback, and a run.json whose status tells the truth."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import OTHERS_RUNNING, run_harness, start_harness

pytestmark = pytest.mark.e2e

KIB = 1024
SLEEPY = ["run", "sleepy", "--strategies", "slow,fast", "--duration-s", "0.05", "--warmup-s", "0"]


def fill(mount: Path, leave_bytes: int) -> None:
    """A file that leaves about `leave_bytes` free on the filesystem of `mount`."""
    stat = os.statvfs(mount)
    size = stat.f_bavail * stat.f_frsize - leave_bytes
    with (mount / "filler").open("wb") as f:
        f.write(b"\0" * size)


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    errors = [x for x in lines if x.startswith("harness: ") and not x.startswith(OTHERS_RUNNING)]
    assert len(errors) == 1, stderr
    return errors[0]


def run_dirs(out: Path) -> list[Path]:
    return [p for p in out.iterdir() if p.is_dir()] if out.is_dir() else []


def run_doc(run_dir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return doc


def test_nearly_empty_a_run_that_fills_the_disk_ends_failed_with_the_reason(
    harness_env: dict[str, str], tmpfs: Path
) -> None:
    """Each repeat's result carries a 100 KB label: run.json outgrows the 2 MiB mid-run."""
    out = tmpfs / "runs"
    label = "x" * (100 * KIB)
    done = run_harness(
        [*SLEEPY, "--repeat", "30", "--param", f"label={label}", "--out", str(out)], harness_env
    )
    assert done.returncode == 1, done.stderr[-2000:]
    line = one_error_line(done.stderr)
    [run_dir] = run_dirs(out)
    assert line.startswith(f"harness: error: cannot write {run_dir}/")
    assert "No space left on device" in line and line.endswith("run.json says failed")
    doc = run_doc(run_dir)
    assert doc["status"] == "failed" and "No space left on device" in doc["error"]
    assert doc["finished_at"] is not None
    leftovers = [p.name for p in run_dir.rglob(".*")]
    assert leftovers == [], leftovers  # no reserve, no temporary file


def test_half_full_a_small_run_completes(harness_env: dict[str, str], tmpfs: Path) -> None:
    fill(tmpfs, 1024 * KIB)
    out = tmpfs / "runs"
    done = run_harness([*SLEEPY, "--repeat", "2", "--out", str(out)], harness_env)
    assert done.returncode == 0, done.stderr
    [run_dir] = run_dirs(out)
    doc = run_doc(run_dir)
    assert doc["status"] == "complete" and "error" not in doc
    assert doc["comparisons"] and not (run_dir / ".harness-reserve").exists()


def test_full_the_run_is_refused_before_it_starts(harness_env: dict[str, str], tmpfs: Path) -> None:
    fill(tmpfs, 128 * KIB)
    out = tmpfs / "runs"
    done = run_harness([*SLEEPY, "--repeat", "2", "--out", str(out)], harness_env)
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert line.startswith(f"harness: error: not enough room for the run in {out}: ")
    assert "KiB free" in line and "needs about" in line
    assert not out.exists()


def test_a_run_directory_removed_mid_run_is_one_line(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = start_harness([*SLEEPY, "--repeat", "40", "--out", str(out)], harness_env)
    try:
        run_json = None
        while run_json is None and proc.poll() is None:
            found = list(out.glob("*/run.json")) if out.is_dir() else []
            run_json = found[0] if found else None
            time.sleep(0.01)  # polling for a file's creation: no event to wait on
        assert run_json is not None, "the run ended before its run.json appeared"
        shutil.rmtree(run_json.parent)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stderr
    line = one_error_line(stderr)
    assert line.startswith(f"harness: error: cannot write {run_json}: ")
    assert "the run directory was removed" in line and line.endswith("could not be updated")
    assert not run_json.parent.exists()


def test_report_on_a_read_only_run_is_one_line(harness_env: dict[str, str], tmpfs: Path) -> None:
    out = tmpfs / "runs"
    done = run_harness([*SLEEPY, "--repeat", "2", "--out", str(out)], harness_env)
    assert done.returncode == 0, done.stderr
    [run_dir] = run_dirs(out)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    report = run_harness(["report", str(run_dir)], harness_env)
    assert report.returncode == 1
    line = one_error_line(report.stderr)
    # The first file the report writes (its opening charts) is the one named.
    prefix, suffix = f"harness: error: cannot write {run_dir}/", ": Read-only file system"
    assert line.startswith(prefix) and line.endswith(suffix), line
    assert (run_dir / line.removeprefix(prefix).removesuffix(suffix)).parent.is_dir(), line


def test_report_refuses_a_foreign_file_as_compare_does(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    foreign = tmp_path / "run.json"
    foreign.write_text(json.dumps({"cells": [], "schema_version": 0}))
    for verb in (["report", str(foreign)], ["compare", str(foreign), str(foreign)]):
        done = run_harness(verb, harness_env)
        assert done.returncode == 2
        assert "schema_version 0, this harness reads schema_version 1 and 2" in done.stderr
