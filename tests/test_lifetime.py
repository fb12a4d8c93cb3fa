"""Nothing outlives the harness, and an oversized cell fails alone: the sleepy workload run by
the real CLI, the harness SIGKILLed in the measured window, a repeat over its memory limit."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FIXTURES,
    OTHERS_RUNNING,
    next_own_line,
    one_repeat,
    run_harness,
    runs_dir,
    sleepy_log,
    start_harness,
)
from requirements import need

from harness.base.owner import Owner
from harness.probes.drivers.perfctl import PERF_PREFIX
from harness.run import abandoned
from harness.run.cgroup import Hierarchy, find_hierarchy
from harness.run.memlimit import human, parse_size

pytestmark = pytest.mark.e2e

WAIT_S = 60.0  # for the machine: a busy 2-core VM starts Python slowly


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"{what}: not within {timeout:g} s"
        time.sleep(0.01)


def not_running(pid: int) -> bool:
    """Gone, or a zombie: it runs no more (who reaps it is its new parent's business)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def hierarchy() -> Hierarchy | None:
    found = find_hierarchy()
    return found if isinstance(found, Hierarchy) else None


def start_in_window(env: dict[str, str], tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """A harness whose one repeat is in its measured window; returns it and the run's owner
    pid (the harness's own, not the venv launcher's)."""
    env = {**env, "SLEEPY_WINDOW": str(tmp_path / "window"), "SLEEPY_SETSID": "1"}
    proc = start_harness(one_repeat(duration_s="120"), env, own_session=True)
    wait_for((tmp_path / "window").exists, WAIT_S, "the measured window did not start")
    return proc, proc.pid


def run_doc(env: dict[str, str]) -> tuple[Path, dict[str, Any]]:
    (folder,) = runs_dir(env).iterdir()
    return folder, json.loads((folder / "run.json").read_text())


def guardian_of(pid: int) -> int:
    """The guardian process the harness started."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == pid and b"harness.run.guardian" in cmdline:
            return int(entry.name)
    raise AssertionError(f"harness {pid} has no guardian")


def leftovers_of(token: str, cgroups: Hierarchy | None) -> list[Path]:
    """The perf folders and cgroup the harness with this token could have left."""
    found = list(Path(tempfile.gettempdir()).glob(f"{PERF_PREFIX}{token}-*"))
    if cgroups is not None and (cgroups.root / token).exists():
        found.append(cgroups.root / token)
    return found


@pytest.mark.parametrize("cgroups", ["on", "off"])
def test_sigkill_of_the_harness_leaves_no_workload_process(
    harness_env: dict[str, str], tmp_path: Path, cgroups: str
) -> None:
    """With cgroups off (or unavailable) the guardian finds the processes by their marker."""
    harness_env["HARNESS_CGROUPS"] = cgroups
    proc, pid = start_in_window(harness_env, tmp_path)
    if cgroups == "off":
        assert proc.stderr is not None
        assert next_own_line(proc.stderr) == (
            "harness: no memory limit per repeat (HARNESS_CGROUPS=off); if the harness dies, "
            "its workload's processes are still ended, found by their HARNESS_OWNER marker\n"
        )
    (entry,) = sleepy_log(harness_env)
    _, doc = run_doc(harness_env)
    assert doc["status"] == "running" and doc["owner"]["pid"] == pid
    token = Owner(pid, doc["owner"]["start_ticks"], doc["owner"]["boot_id"]).token
    os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=WAIT_S)
    workload = (entry["pid"], entry["server_pid"])  # the server in a session of its own
    # Ended by the guardian, not by running out: the sleepy run lasts 120 s.
    wait_for(lambda: all(not_running(p) for p in workload), WAIT_S, "workload processes left")
    # The guardian then marks the run and leaves nothing behind.
    wait_for(lambda: run_doc(harness_env)[1]["status"] == "abandoned", WAIT_S, "not marked")
    _, doc = run_doc(harness_env)
    reason = (
        rf"its harness \(pid {pid}\) died before the run ended \(found by its guardian\); "
        r"\d+ leftover workload process(es)? ended, \d+ partial files? removed"
    )
    assert re.fullmatch(reason, doc["abandoned_reason"]), doc["abandoned_reason"]
    assert doc["finished_at"]
    assert leftovers_of(token, hierarchy()) == []


def test_the_next_run_marks_the_abandoned_run_and_ends_its_leftovers(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    proc, pid = start_in_window(harness_env, tmp_path)
    (entry,) = sleepy_log(harness_env)
    folder, _ = run_doc(harness_env)
    # The machine's OOM killer takes the harness and its guardian: nothing is cleaned now.
    os.kill(guardian_of(pid), signal.SIGKILL)
    os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=WAIT_S)
    wait_for(lambda: not_running(entry["pid"]), WAIT_S, "the parent-death signal did not kill")
    server = entry["server_pid"]
    assert not not_running(server)  # a daemon-like child outside the process group lives on
    try:
        done = run_harness(one_repeat(), harness_env)
    finally:
        if not not_running(server):
            os.kill(server, signal.SIGKILL)
    assert done.returncode == 0, done.stderr
    doc = json.loads((folder / "run.json").read_text())
    assert doc["status"] == "abandoned"
    # 1 process ended: the server (0 if a harness of another test run swept it first).
    line = (
        rf"harness: abandoned run: {re.escape(str(folder))}: its harness \(pid {pid}\) died "
        r"before the run ended \(found at the next start\); [01] leftover workload process"
    )
    assert re.search(line, done.stderr), done.stderr
    assert doc["abandoned_reason"] in done.stderr
    assert not_running(server)
    assert len(list(runs_dir(harness_env).iterdir())) == 2


def test_an_oversized_cell_fails_alone_out_of_memory(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    need(None if hierarchy() else f"no memory cgroups: {find_hierarchy()}")
    env = {**harness_env, "HARNESS_REPEAT_MEMORY_MAX": "96M"}
    done = run_harness(
        [
            "run",
            "sleepy",
            "--strategies",
            "slow",
            "--param",
            "hog_mb=0",
            "--param",
            "hog_mb=400",
            "--repeat",
            "2",
            "--duration-s",
            "0.1",
            "--warmup-s",
            "0",
        ],
        env,
    )
    assert done.returncode == 1, done.stderr
    _, doc = run_doc(harness_env)
    small, big = doc["cells"]
    assert len(small["repeats"]) == 2 and small["failures"] == []
    assert big["repeats"] == [] and len(big["failures"]) == 2
    for failure in big["failures"]:
        assert failure["error"].startswith("out of memory (limit 96 MiB): killed by SIGKILL"), (
            failure
        )
    assert doc["status"] == "partial"


def test_the_memory_limit_is_a_size() -> None:
    assert parse_size("96M") == 96 << 20
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size("4096") == 4096
    assert human(96 << 20) == "96 MiB"
    with pytest.raises(ValueError):
        parse_size("lots")


def test_a_bad_memory_limit_is_refused_before_anything_runs(harness_env: dict[str, str]) -> None:
    done = run_harness(["run", "sleepy"], {**harness_env, "HARNESS_REPEAT_MEMORY_MAX": "lots"})
    assert done.returncode == 2
    assert "HARNESS_REPEAT_MEMORY_MAX must be a size such as 512M or 4G, got 'lots'" in done.stderr
    assert not runs_dir(harness_env).exists()


def test_a_cell_that_cannot_fit_is_refused_before_anything_runs(
    harness_env: dict[str, str],
) -> None:
    env = {**harness_env, "HARNESS_REPEAT_MEMORY_MAX": "512M"}
    done = run_harness(["run", "sleepy", "--param", "rate=100", "--param", "rate=1000000"], env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "harness: error: cell 'slow/rate=1000000' needs 982 MiB of memory, more than the "
        "512 MiB of the memory a repeat may use here (MemAvailable less a reserve, or "
        "HARNESS_REPEAT_MEMORY_MAX)\n"
    )
    assert not runs_dir(harness_env).exists()


def test_repeats_and_sweeps_are_bounded(harness_env: dict[str, str]) -> None:
    done = run_harness(["run", "sleepy", "--repeat", "100000000"], harness_env)
    assert done.returncode == 2
    assert "argument --repeat: must be <= 1000, got '100000000'" in done.stderr
    sweep = [arg for rate in range(1, 5002) for arg in ("--param", f"rate={rate}")]
    done = run_harness(["run", "sleepy", "--strategies", "slow,fast", *sweep], harness_env)
    assert done.returncode == 2
    assert done.stderr == (
        "harness: error: the plan has 10,002 cells (strategies x scenarios x swept values), "
        "more than the 10,000 a run may have: sweep fewer values\n"
    )
    # sleepy's [bench] strategies (slow, fast) x 200 rates.
    done = run_harness(["run", "sleepy", "--repeat", "1000", *sweep[:400]], harness_env)
    assert done.returncode == 2
    assert "the plan runs 400,000 repeats (400 cells x 1000), more than the 100,000" in (
        done.stderr
    )
    assert not runs_dir(harness_env).exists()


def test_other_workload_processes_are_named_before_the_run(harness_env: dict[str, str]) -> None:
    stray = subprocess.Popen(
        [sys.executable, str(FIXTURES / "sleepy" / "sleepy.py"), "serve"],
        stdin=subprocess.DEVNULL,
    )
    try:
        done = run_harness(one_repeat(), harness_env)
    finally:
        stray.kill()
        stray.wait()
    assert done.returncode == 0, done.stderr
    # Those of parallel tests may be named too, in any order.
    (line,) = [line for line in done.stderr.splitlines() if line.startswith(OTHERS_RUNNING)]
    named = line.removeprefix(f"{OTHERS_RUNNING} are running and will skew the figures: ")
    assert f"sleepy.py (pid {stray.pid})" in named.split(", "), line


def test_recovery_removes_the_partial_files_of_a_dead_owner(harness_env: dict[str, str]) -> None:
    done = run_harness(one_repeat(), harness_env)
    assert done.returncode == 0, done.stderr
    folder, doc = run_doc(harness_env)
    # As a harness SIGKILLed in its second repeat, with probes, leaves it.
    doc["status"], doc["finished_at"] = "running", None
    doc["owner"] = {**doc["owner"], "start_ticks": doc["owner"]["start_ticks"] + 1}
    (folder / "run.json").write_text(json.dumps(doc))
    probes = folder / "probes" / "slow"
    probes.mkdir(parents=True)
    partial = [probes / "r2-sched.json", probes / "r2-oncpu.perf.data", folder / ".run.json.1.tmp"]
    for path in partial:
        path.write_bytes(b"")
    (probes / "overhead-none").mkdir()
    lines = abandoned.recover(runs_dir(harness_env), None)
    assert lines == [
        f"{folder}: its harness (pid {doc['owner']['pid']}) died before the run ended (found at "
        "the next start); 0 leftover workload processes ended, 4 partial files removed"
    ]
    assert not any(path.exists() for path in partial) and not (probes / "overhead-none").exists()
    marked = json.loads((folder / "run.json").read_text())
    assert marked["status"] == "abandoned" and marked["finished_at"]
    assert abandoned.recover(runs_dir(harness_env), None) == []  # once only
