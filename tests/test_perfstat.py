"""The perfstat probe (harness/probes/drivers/perfstat.py) with real perf against a child whose
context switches are known: it sleeps SLEEPS times in the window, a voluntary switch each."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from requirements import need

from harness.probes.availability import perf_problem
from harness.probes.drivers.perfstat import HARDWARE, SOFTWARE, PerfStatProbe, event_support
from harness.probes.kind import RepeatContext
from harness.probes.kinds.perfstat import derive, recorded
from harness.probes.probe import ATTACH_TIMEOUT_S, ProbeSpec

pytestmark = pytest.mark.bpf
SLEEPS = 50
CHILD = f"""
import sys, time
print("ready", flush=True)
sys.stdin.readline()
for _ in range({SLEEPS}):
    time.sleep(0.001)
print("done", flush=True)
sys.stdin.readline()
"""


def test_perfstat_counts_the_window_and_says_which_events_are_unavailable(
    tmp_path: Path,
) -> None:
    need(perf_problem())
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    probe = PerfStatProbe(ProbeSpec("perfstat"), tmp_path / "r1-perfstat.json")
    try:
        assert child.stdout.readline() == "ready\n"
        probe.start([child.pid])
        probe.wait_attached(time.monotonic() + ATTACH_TIMEOUT_S, None)
        assert probe.unavailable is None
        probe.window_start()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "done\n"
        probe.window_end()
        result = probe.finish()
    finally:
        child.kill()
        child.wait()
    assert result.ok, result
    data = result.data
    assert data is not None
    support = event_support()
    # Every event is counted or says why not; the software ones count everywhere.
    assert set(data["events"]) | set(data["unavailable_events"]) == {*HARDWARE, *SOFTWARE}
    assert set(SOFTWARE) <= set(data["events"])
    for event, why in data["unavailable_events"].items():
        assert why == support[event]
        assert event not in HARDWARE or why == "PMU not available"
    counts = data["processes"][0]["counts"]
    # The window holds the sleeps (a switch each) and not more CPU than its length.
    assert counts["context-switches"] >= SLEEPS
    assert 0 < counts["task-clock"] <= data["window_ns"]
    metrics = derive(data, RepeatContext(child.pid, float(SLEEPS), None, ()))
    assert metrics["perf_context_switches_per_op"] >= 1
    assert metrics["perf_task_clock_ns_per_op"] == counts["task-clock"] / SLEEPS
    notes = recorded(data, None).get("notes") or []
    assert [n for n in notes if "unavailable" in n] == [
        f"{e}: unavailable: {why}" for e, why in data["unavailable_events"].items()
    ]
