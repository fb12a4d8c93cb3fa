"""Real probes on real processes: the collectors and bpftrace scripts against the timers
workload and a threaded Python process, and no BPF program left loaded afterwards.

Skipped where the machine cannot load BPF (no privilege, no BTF, no bpftrace, no tracefs);
with REQUIRE_BPF=1 those skips fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bpftool import bpf_ids, prog_holders
from conftest import FIXTURES, only_run, run_harness, start_harness
from cputime import SPINNERS
from requirements import need

from harness.paths import REPO_ROOT
from harness.probes.availability import (
    bpftrace_problem,
    btf_problem,
    collector_binary,
    privilege_problem,
    tracefs_mounted,
)
from harness.probes.spec import COLLECTORS
from harness.suites import discover

pytestmark = [pytest.mark.bpf, pytest.mark.e2e]

WORKLOADS = REPO_ROOT / "workloads"
SYSCALLS_BT = "bt:bpf/syscalls_per_op.bt"
# Longer than the harness's delay in relaying an event on a busy machine (see its use).
WINDOW_WARMUP_S = 1.0
TIMERS_RUN = ["--param", "concurrency=64", "--warmup-s", "0.2", "--repeat", "1"]


def no_tracefs() -> str | None:
    return None if tracefs_mounted() else "tracefs is not mounted (bpftrace tracepoints)"


@pytest.fixture
def bpf_env(harness_env: dict[str, str]) -> dict[str, str]:
    """The harness env with the real workloads, where the collectors can run."""
    need(privilege_problem() or btf_problem())
    for name in COLLECTORS:
        if not collector_binary(name).is_file():
            pytest.fail(f"{collector_binary(name)} is not built: run `make -C bpf`")
    if not discover(WORKLOADS)["timers"].built:
        pytest.fail("the timers workload is not built: run `make deps`")
    return {**harness_env, "HARNESS_WORKLOADS": str(WORKLOADS)}


def run_timers(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """run.json and the table (stderr with --json) of `harness run timers ARGS`."""
    done = run_harness(["run", "timers", *args, "--json"], env, timeout=150)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc, done.stderr


@pytest.fixture
def gil_fight() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", SPINNERS])
    try:
        # Until its four threads are started.
        deadline = time.monotonic() + 60
        while len(list(Path(f"/proc/{proc.pid}/task").iterdir())) < 4:
            assert time.monotonic() < deadline, "the GIL fight did not start its threads"
            time.sleep(0.01)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_timers_run_gets_per_op_metrics_from_the_collectors(bpf_env: dict[str, str]) -> None:
    doc, table = run_timers(
        [
            "--strategies",
            "none,deadline-tracker",
            "--probes",
            "sched,futex",
            "--param",
            "concurrency=64",
            "--duration-s",
            "1",
            "--warmup-s",
            str(WINDOW_WARMUP_S),
            "--repeat",
            "2",
            "--explain-repeats",
            "2",
        ],
        bpf_env,
    )
    assert doc["status"] == "complete"
    run_dir = Path(bpf_env["HARNESS_RESULTS"]) / "runs" / doc["run_id"]
    for cell in doc["cells"]:
        # sched counters only on the measurement repeats; on the explain repeats (both
        # rounds) sched in full, with its histograms, and futex, explain-only, with its stacks.
        explained = cell["probe_variants"]["all"]
        sched_metrics = (
            "ctx_switches_per_op",
            "voluntary_switches_per_op",
            "wakeups_per_op",
            "offcpu_ns_per_op",
            "runq_ns_per_op",
        )
        futex_metrics = ("futex_waits_per_op", "futex_wait_ns_per_op")
        runs: list[tuple[dict[str, Any], tuple[str, ...]]]
        runs = [(result, sched_metrics) for result in cell["repeats"]]
        runs += [(result, sched_metrics + futex_metrics) for result in explained]
        for result, names in runs:
            assert all(result[name] > 0 for name in names), (cell["id"], result)
            assert result["ctx_switches_per_op"] >= result["voluntary_switches_per_op"]
        assert not any(name in result for result in cell["repeats"] for name in futex_metrics)
        for result in explained:  # the quantiles need the full mode's histograms
            runq = result["runq_latency_ns"]
            assert 0 < runq["p50"] <= runq["p99"]
        assert all("runq_latency_ns" not in result for result in cell["repeats"])
        assert cell["explain_summary"]["futex_wait_ns_per_op"]["n"] == 2
        assert cell["summary"]["ctx_switches_per_op"]["n"] == 2
        assert cell["summary"]["runq_ns_per_op"]["n"] == 2
        assert cell["explain_summary"]["runq_latency_ns.p99"]["n"] == 2
        for name, folder, results in (
            ("sched", "explain/", explained),
            ("futex", "explain/", explained),
        ):
            probe = cell["probes"][name]
            assert probe["lost_events"] == 0
            assert len(probe["paths"]) == 2
            for k, entry in enumerate(probe["repeats"], start=1):
                assert entry["path"] == f"probes/{cell['id']}/{folder}r{k}-{name}.json"
                raw = json.loads((run_dir / entry["path"]).read_text())
                assert raw["probe"] == name and raw["lost_events"] == 0
                # The cell keeps the explain records: sched's full, futex's with the stacks.
                if name == "futex":
                    assert raw["stacks"] is True
                else:
                    assert raw["mode"] == "full"
                # The window is the measured second, not the warm-up or the set-up, nor cut
                # short. The harness signals the collectors as it reads measure_start and
                # measure_end, each late by however long a busy machine keeps it waiting:
                # the window is the measured one plus the second delay less the first. One
                # that also counted the warm-up would be longer by all of it.
                window_s = raw["window_ns"] / 1e9
                measured_s = results[k - 1]["duration_s"]
                assert measured_s / 2 < window_s < measured_s + WINDOW_WARMUP_S, (
                    window_s,
                    measured_s,
                )
                assert entry["totals"] == raw["totals"]
    for label in ("ctx sw/op", "wakeups/op", "off-CPU/op", "runq/op"):
        assert label in table
    # futex wait/op is the explain repeats' figure (explain_summary), not a column.
    assert "futex wait/op" not in table


def test_probe_a_running_process(bpf_env: dict[str, str], gil_fight: int) -> None:
    need(bpftrace_problem())
    args = ["probe", "--pid", str(gil_fight), "--duration-s", "1", "--json"]
    started = time.monotonic()
    # A tracepoint script: pthread_mutex_contention.bt loses its uretprobes now and then on
    # this kernel with bpftrace 0.17 (see its header), which is not what this test is about.
    done = run_harness([*args, "--probes", f"sched,futex,{SYSCALLS_BT}"], bpf_env)
    command_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["pids"] == [gil_fight] and doc["duration_s"] == 1
    sched, futex = doc["probes"]["sched"], doc["probes"]["futex"]
    threads = [t for t in sched["threads"] if t["pid"] == gil_fight]
    assert len(threads) == 4
    assert all(t["voluntary_switches"] + t["involuntary_switches"] > 0 for t in threads)
    # Counting from its attachment (--now) to the end of the 1 s window: at least that
    # second, at most the whole command.
    assert 1e9 <= sched["window_ns"] < command_s * 1e9 and sched["lost_events"] == 0
    (process,) = futex["processes"]
    assert process["pid"] == gil_fight and futex["totals"]["waits"] > 0
    syscalls = doc["probes"]["bt:syscalls_per_op"]
    assert "diff" in syscalls, syscalls  # otherwise unavailable or an error, with its reason
    # The GIL's hand-overs wait on futexes: counted in the window.
    assert syscalls["diff"]["@syscalls"].get("futex", 0) > 0, syscalls
    assert syscalls["diff"]["@total"] >= syscalls["diff"]["@syscalls"]["futex"]
    # The window difference is smaller than the final count, which includes the attach time.
    assert syscalls["diff"]["@total"] < syscalls["end"]["@total"]["value"]

    done = run_harness(["probe", "--pid", str(gil_fight), "--duration-s", "0.5"], bpf_env)
    assert done.returncode == 0, done.stderr
    assert "sched: top 10 threads by context switches" in done.stdout
    assert f"{gil_fight}/{gil_fight}" in done.stdout
    assert "futex: top 10 contended addresses" in done.stdout


def tagged(tag: str) -> set[int]:
    """Processes started by this test case: they inherit HARNESS_TEST_TAG=<tag>."""
    marker = f"HARNESS_TEST_TAG={tag}".encode()
    pids = set()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes().split(b"\0"):
                pids.add(int(environ.parts[2]))
        except OSError:
            continue
    return pids


def leftovers(before: set[int], tag: str) -> list[int]:
    """Programs loaded since `before` and still there, unless another process (another test
    suite running on this machine) holds them."""
    deadline = time.monotonic() + 10  # programs are freed after their last holder, a bit later
    while True:
        ours = tagged(tag)
        holders = prog_holders()
        left = [
            prog
            for prog in bpf_ids("prog") - before
            if not holders.get(prog) or holders[prog] & ours
        ]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def wait_for_probes(tag: str, count: int, timeout: float = 30) -> None:
    """Until `count` processes of this case hold BPF programs (the probes are attached)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ours = tagged(tag)
        holding = {pid for pids in prog_holders().values() for pid in pids & ours}
        if len(holding) >= count:
            return
        time.sleep(0.1)
    pytest.fail(f"{count} probes did not attach within {timeout} s")


@pytest.mark.parametrize("case", ["normal", "ctrl-c", "workload crash"])
def test_no_bpf_program_stays_loaded(case: str, bpf_env: dict[str, str]) -> None:
    need(bpftrace_problem() or no_tracefs())
    tag = uuid.uuid4().hex
    env = {**bpf_env, "HARNESS_TEST_TAG": tag}
    probes = ["--probes", f"sched,futex,{SYSCALLS_BT}"]
    before = bpf_ids("prog")
    if case == "normal":
        args = ["run", "timers", "--strategies", "none", *probes, *TIMERS_RUN]
        done = run_harness([*args, "--duration-s", "0.3"], env)
        assert done.returncode == 0, done.stderr
        probes_doc = only_run(env)["cells"][0]["probes"]
        assert probes_doc["bt:syscalls_per_op"].get("paths"), probes_doc
    elif case == "ctrl-c":
        args = ["run", "timers", "--strategies", "none", *probes, *TIMERS_RUN]
        harness = start_harness([*args, "--duration-s", "20"], env)
        wait_for_probes(tag, 3)
        time.sleep(0.5)  # into the warm-up or the window
        harness.send_signal(signal.SIGINT)  # what a Ctrl-C on its terminal delivers
        _, stderr = harness.communicate(timeout=60)
        assert harness.returncode == 130, stderr
        assert only_run(env)["status"] == "interrupted"
    else:
        env["HARNESS_WORKLOADS"] = str(FIXTURES)
        args = ["run", "sleepy", "--strategies", "crash", *probes, "--repeat", "1"]
        done = run_harness([*args, "--duration-s", "0.3", "--warmup-s", "0"], env)
        assert done.returncode == 1, done.stderr
        (cell,) = only_run(env)["cells"]
        assert cell["repeats"] == [] and cell["failures"][0]["exit_code"] == 1
        run_dir = next((Path(env["HARNESS_RESULTS"]) / "runs").iterdir())
        assert not list(run_dir.glob("probes/**/*.json"))
    assert leftovers(before, tag) == [], (
        f"{len(bpf_ids('prog'))} programs now, {len(before)} before"
    )
    assert tagged(tag) == set()


def test_bpftrace_scripts_in_a_run(bpf_env: dict[str, str]) -> None:
    need(bpftrace_problem() or no_tracefs())
    doc, _ = run_timers(
        ["--strategies", "none", "--probes", SYSCALLS_BT, *TIMERS_RUN, "--duration-s", "0.5"],
        bpf_env,
    )
    (cell,) = doc["cells"]
    (entry,) = cell["probes"]["bt:syscalls_per_op"]["repeats"]
    # A script is explain-only: it ran on the explain repeat, divided by that repeat's ops.
    (explained,) = cell["probe_variants"]["bt:syscalls_per_op"]
    ops = explained["ok"]
    assert entry["diff"]["@total"] > 0
    assert entry["per_op"]["@total"] == pytest.approx(entry["diff"]["@total"] / ops)
    # The tokio client talks to its server over sockets and parks its workers on futexes.
    per_op = entry["per_op"]["@syscalls"]
    assert {"futex", "epoll_wait"} <= set(per_op) or {"futex", "epoll_pwait"} <= set(per_op)
    assert "@name" in entry["not_diffed"] and entry["notes"] == []
    run_dir = Path(bpf_env["HARNESS_RESULTS"]) / "runs" / doc["run_id"]
    raw = json.loads((run_dir / entry["path"]).read_text())
    assert (
        raw["start"]["@total"]["value"] + entry["diff"]["@total"] == raw["end"]["@total"]["value"]
    )
    assert any('"attached_probes"' in line for line in raw["lines"])
    assert os.path.samefile(raw["script"], REPO_ROOT / "bpf" / "syscalls_per_op.bt")
