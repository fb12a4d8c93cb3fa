"""The pools suite through the harness: one table per trace (the real vitess smartconnpool
beside the reimplementations), the wait-time and per-connection plots, and the gc probe
agreeing with the Go runtime's own counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_harness, runs_dir
from requirements import need

from harness.paths import REPO_ROOT
from harness.probes.availability import collector_problem
from harness.suites import discover

pytestmark = pytest.mark.e2e

WORKLOADS = REPO_ROOT / "workloads"


@pytest.fixture
def pools_env(harness_env: dict[str, str]) -> dict[str, str]:
    if not discover(WORKLOADS)["pools"].built:
        pytest.fail("the pools workload is not built: run `make deps`")
    return {**harness_env, "HARNESS_WORKLOADS": str(WORKLOADS)}


def run_pools(args: list[str], env: dict[str, str]) -> tuple[Path, dict[str, Any], str]:
    done = run_harness(["run", "pools", *args], env, timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(env).iterdir()
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return run_dir, doc, done.stdout


def test_a_table_per_trace_with_plots(pools_env: dict[str, str]) -> None:
    args = ["--scenario", "contended,uncontended-no-settings", "--duration-s", "2"]
    run_dir, doc, out = run_pools([*args, "--repeat", "1", "--probes", "none"], pools_env)
    assert [c["id"] for c in doc["cells"]] == [
        f"{scenario}/{strategy}"
        for scenario in ("contended", "uncontended-no-settings")
        for strategy in ("fifo-channel", "smart-lifo", "puddle", "vitess-smartconnpool")
    ]
    assert doc["config"]["scenario"] == ["contended", "uncontended-no-settings"]
    for title in ("scenario contended", "scenario uncontended-no-settings"):
        assert title in out
    for column in ("wait avg", "wait std", "wait p50", "wait p75", "wait p99", "wait max"):
        assert column in out
    assert "vs fifo-channel" in out
    for cell in doc["cells"]:
        (repeat,) = cell["repeats"]
        assert repeat["requests"] == sum(repeat["conn_requests"]) > 0
        assert cell["summary"]["wait_ns.avg"]["n"] == 1
        assert repeat["connections_open_max"] <= cell["params"]["capacity"]
    # The real vitess pool (bin/pools-bench-vitess, exec'd by pools-bench) replays the same
    # trace as the others, in the same table.
    requests = {(c["scenario"], c["strategy"]): c["repeats"][0]["requests"] for c in doc["cells"]}
    for scenario in ("contended", "uncontended-no-settings"):
        assert requests[scenario, "vitess-smartconnpool"] == requests[scenario, "smart-lifo"]
    assert "vitess-smartconnpool" in out
    kinds = {(p["scenario"], p["kind"]) for p in doc["plots"]}
    assert kinds == {
        (s, k) for s in ("contended", "uncontended-no-settings") for k in ("wait", "per_conn")
    }
    for plot in doc["plots"]:
        assert (run_dir / plot["path"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "plots/contended.wait.png" in (run_dir / "report.html").read_text()


@pytest.mark.bpf
def test_gc_probe_agrees_with_the_runtime(pools_env: dict[str, str]) -> None:
    """ballast collects garbage hundreds of times a second: the probe's GC cycles and pause
    time over the window against the runtime's own figures over the workload's window (the
    two windows open and close a signal apart, hence the small tolerance)."""
    need(collector_problem("gc"))
    args = ["--scenario", "ballast", "--strategies", "smart-lifo", "--probes", "gc"]
    run_dir, doc, _ = run_pools([*args, "--duration-s", "2", "--warmup-s", "0.5"], pools_env)
    (cell,) = doc["cells"]
    assert "unavailable" not in cell["probes"]["gc"], cell["probes"]["gc"]
    # The collector's own record of each repeat, shown with a failure: how many pauses it had
    # to time from its uprobes instead of the runtime's clock, and each stop reason's figures.
    raw = {
        r["repeat"]: json.loads((run_dir / r["path"]).read_text())
        for r in cell["probes"]["gc"]["repeats"]
    }
    assert cell["probes"]["gc"]["lost_events"] == 0
    windows = {r["repeat"]: r["window_ns"] / 1e9 for r in cell["probes"]["gc"]["repeats"]}
    for index, repeat in enumerate(cell["repeats"], start=1):
        runtime_cycles = repeat["runtime_gc_cycles"]
        # The probe's window opens and closes a signal after the workload's: at hundreds of
        # cycles a second, what the two windows' lengths differ by (a loaded machine delays
        # one signal more than the other) is cycles one counts and the other does not.
        rate = runtime_cycles / repeat["window_s"]
        skew = rate * abs(windows[index] - repeat["window_s"])
        # However little CPU the run got, its garbage bounds the cycles from below: each op
        # allocates alloc_bytes, and a cycle starts before the heap outgrows its goal (GOGC=100:
        # twice the live heap, at least 4 MiB), doubled here for stacks and globals.
        allocated = repeat["ops"] * cell["params"]["alloc_bytes"]
        goal = 2 * max(4 << 20, 2 * repeat["heap_live_bytes"])
        assert runtime_cycles >= allocated // goal > 0, (allocated, goal)
        assert abs(repeat["gc_cycles"] - runtime_cycles) <= max(3, 0.05 * runtime_cycles) + skew
        runtime_pause = repeat["runtime_gc_pause_total_ns"]
        assert repeat["gc_pause_ns"]["total"] == pytest.approx(
            runtime_pause, rel=0.10 + skew / runtime_cycles
        ), raw[index]
        assert repeat["gc_pause_ns"]["count"] >= 2 * repeat["gc_cycles"] - 2
        assert 0 < repeat["gc_pause_ns"]["max"] <= repeat["gc_pause_ns"]["total"]
