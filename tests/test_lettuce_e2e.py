"""The lettuce suite through the harness and on its own: the three strategies side by side,
redis-server started and always stopped (also when the launcher's JVM is killed), and the
jvmgc probe agreeing with the JVM's own GC figures (GarbageCollectorMXBean)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import HARNESS, run_harness, runs_dir
from requirements import need

from harness.catalog import unmet_requirements
from harness.paths import REPO_ROOT
from harness.probes.availability import bpftrace_problem, perf_problem
from harness.suites import Suite, discover

pytestmark = pytest.mark.e2e

WORKLOADS = REPO_ROOT / "workloads"
STRATEGIES = ("executor-expiry", "wheel-expiry", "no-timeout")
GONE_WITHIN_S = 15.0  # a safety net on a busy machine, not a measurement


def lettuce_suite() -> Suite:
    suite = discover(WORKLOADS)["lettuce"]
    unmet = unmet_requirements(suite)  # `make deps` installs them
    need(unmet and f"the lettuce suite cannot run here: {unmet}")
    if not suite.built or not (suite.folder / "bench" / "target" / "lettuce-bench.jar").is_file():
        pytest.fail("the lettuce workload is not built: run `make deps`")
    return suite


@pytest.fixture
def lettuce_env(harness_env: dict[str, str]) -> dict[str, str]:
    lettuce_suite()
    return {**harness_env, "HARNESS_WORKLOADS": str(WORKLOADS)}


def dead(pid: int) -> bool:
    """Not running: gone, or a zombie nobody reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_dead(pid: int) -> bool:
    deadline = time.monotonic() + GONE_WITHIN_S
    while not dead(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def redis_servers() -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "redis-server" and not dead(
                    int(entry.name)
                ):
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


def run_lettuce(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str]:
    done = run_harness(["run", "lettuce", *args], env, timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(env).iterdir()
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return doc, done.stdout


def test_three_strategies_side_by_side(lettuce_env: dict[str, str]) -> None:
    before = redis_servers()
    args = ["--duration-s", "1", "--warmup-s", "0.5", "--repeat", "1", "--probes", "none"]
    doc, out = run_lettuce([*args, "--param", "threads=16"], lettuce_env)
    assert [c["strategy"] for c in doc["cells"]] == list(STRATEGIES)
    versions = {"executor-expiry": "6.3.1", "wheel-expiry": "6.3.2", "no-timeout": "6.3.2"}
    for cell in doc["cells"]:
        (repeat,) = cell["repeats"]
        assert repeat["lettuce_version"].startswith(versions[cell["strategy"]]), repeat
        assert repeat["ops"] == repeat["ok"] == repeat["issued"] > 0
        assert repeat["errors"] == repeat["timeouts"] == 0
        assert repeat["latency_ns"]["p50"] <= repeat["latency_ns"]["max"]
    assert "vs executor-expiry" in out
    assert redis_servers() <= before, "redis-server left running"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_redis_server_dies_with_the_launcher(sig: signal.Signals) -> None:
    """The JVM started redis-server; killed at its gate (SIGTERM: its shutdown hook stops
    redis; SIGKILL: the kernel's parent-death signal does), it leaves no redis-server."""
    suite = lettuce_suite()
    proc = subprocess.Popen(
        [str(suite.binary), "run", "--strategy", "no-timeout", "--duration-s", "30", "--gate"],
        cwd=suite.folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready", ready
        jvm, redis = ready["pids"]
        assert jvm == proc.pid
        assert Path(f"/proc/{redis}/comm").read_text().strip() == "redis-server"
        os.kill(jvm, sig)
        proc.wait(timeout=GONE_WITHIN_S)
        assert wait_dead(redis), f"redis-server {redis} still running after {sig.name}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_redis_server_stops_when_the_harness_is_stopped(lettuce_env: dict[str, str]) -> None:
    """SIGTERM to `harness run` in the middle of a repeat: the harness stops the workload,
    whose JVM stops its redis-server on the way out."""
    before = redis_servers()
    args = ["run", "lettuce", "--strategies", "no-timeout", "--repeat", "1", "--probes", "none"]
    harness = subprocess.Popen(
        [*HARNESS, *args, "--duration-s", "120", "--warmup-s", "0"],
        env=lettuce_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (started := redis_servers() - before):
            assert harness.poll() is None, harness.communicate()[1]
            assert time.monotonic() < deadline, "no redis-server started"
            time.sleep(0.1)
        harness.send_signal(signal.SIGTERM)
        assert harness.wait(timeout=60) == 130
        for pid in started:
            assert wait_dead(pid), f"redis-server {pid} still running after the harness stopped"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


@pytest.mark.bpf
def test_jvmgc_probe_agrees_with_the_jvm(lettuce_env: dict[str, str]) -> None:
    """A small young generation makes the JVM collect several times a second: the probe's GC
    cycles and GC time (gc__begin to gc__end) over the window against the JVM's own
    collections and collection time over the workload's window, with the Go gc probe's
    tolerances (5% or 3 cycles, 10% of the time) plus the beans' resolution of 1 ms a
    collection; the GC pauses (the safepoints the GCs ran in, the time to reach them
    included) are at least the GC time. The two windows open and close a signal apart: a
    collection in between counts on one side only.

    gc__begin and gc__end (HotSpot's SvcGCMarker) enclose the scope the beans time
    (TraceMemoryManagerStats): the pause's set-up and tear-down around that scope count on
    the probe's side only. On a busy machine a VM thread preempted there stretches one
    collection by milliseconds the JVM does not count (5 ms of 20 in one CI run), so the
    probe may exceed the JVM by up to one pause more, and never fall short of it."""
    need(bpftrace_problem())
    need(perf_problem())
    env = {**lettuce_env, "LETTUCE_BENCH_JVM_OPTS": "-Xmn8m"}
    args = ["--strategies", "no-timeout", "--probes", "jvmgc,oncpu", "--repeat", "2"]
    doc, out = run_lettuce([*args, "--duration-s", "3", "--warmup-s", "1"], env)
    # The same run's on-CPU profile has Java frames by name (frame pointers kept, perf map).
    (run_dir,) = runs_dir(env).iterdir()
    folded = (run_dir / "folded" / "no-timeout.oncpu.folded").read_text()
    assert "io.lettuce.core" in folded and "_[j]" in folded, folded[:2000]
    (cell,) = doc["cells"]
    assert "unavailable" not in cell["probes"]["jvmgc"], cell["probes"]["jvmgc"]
    assert "JVM GC pause" in out
    for repeat in cell["repeats"]:
        jvm = repeat["jvm_gc"]
        collections = jvm["collections"]
        assert collections >= 2, jvm  # 8 MiB of young generation fills many times in 3 s
        cycles = repeat["jvm_gc_cycles"]
        assert abs(cycles - collections) <= max(3, 0.05 * collections), (cycles, jvm)
        pause = repeat["jvm_gc_pause_ns"]
        assert pause["count"] == cycles
        assert 0 < pause["max"] <= pause["total"]
        gc_ns = repeat["jvm_gc_time_ns"]
        assert 0 < gc_ns <= pause["total"], (gc_ns, pause)
        jvm_ns = jvm["time_ms"] * 1e6
        longest = max(pause["max"], jvm["max_ms"] * 1e6 + 1e6)
        slack = 0.10 * jvm_ns + 1e6 * collections + abs(cycles - collections) * longest
        assert jvm_ns - slack <= gc_ns <= jvm_ns + slack + pause["max"], (gc_ns, pause, jvm)
