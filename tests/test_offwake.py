"""The offwake collector (bpf/build/offwake) and the BPF statistics of a probe's programs
(harness/probes/bpfstats.py), with real probes against the pingpong fixture: two threads
handing a turn back and forth over a futex, each woken by the other (its ground truth)."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest
from conftest import only_run, run_harness, runs_dir
from test_bpf_collectors import ROOT, Collector, LineProcess, Target, collectors, fixtures, reap

from harness.probes.bpfstats import BpfStatsWatch
from harness.probes.kinds.offwake import SEPARATOR, folded_lines, waker_pairs

pytestmark = pytest.mark.bpf
__all__ = ["collectors", "fixtures", "reap"]  # the fixtures, shared with the collectors' tests
THREADS = 3  # the fixture's main thread, pinger, ponger


def test_offwake_stacks_name_the_waker_and_the_bpf_stats_count_its_runs(
    collectors: Path, fixtures: dict[str, Path], tmp_path: Path, reap: list[LineProcess]
) -> None:
    target = Target(fixtures["pingpong"])
    reap.append(target)
    collector = Collector("offwake", [target.pid], tmp_path / "offwake.json")
    reap.append(collector)
    watch = BpfStatsWatch({"offwake": [collector.pid]})
    try:
        watch.attached()
        watch.window_start()
        collector.window(signal.SIGUSR1)
        pinger_woke, ponger_woke = (int(word) for word in target.phase("go"))
        window_ns = collector.window(signal.SIGUSR2)
        watch.window_end()
    finally:
        watch.close()
    run = collector.stop()
    assert run.rc == 0
    result = run.result

    stacks = folded_lines(result)
    totals = result["totals"]
    # Every blocking of the target's threads ends in the window, counted from its start.
    assert sum(stacks.values()) == totals["blocked_ns"]
    assert 0 < totals["blocked_ns"] <= THREADS * window_ns
    lost = result["lost_stacks"]
    assert set(lost) == {"collisions", "errors"}

    # Each thread is woken by the other, in futex_wake, while it waits in futex_wait.
    pairs = waker_pairs(stacks)
    counts: Counter[tuple[str, str]] = Counter()
    for entry in result["stacks"]:
        frames = entry["folded"].split(";")
        assert SEPARATOR in frames, frames
        counts[(frames[0], frames[-1])] += entry["count"]
        if (frames[0], frames[-1]) in (("pinger", "ponger"), ("ponger", "pinger")):
            split = frames.index(SEPARATOR)
            assert frames[1] == "[S sleeping]", frames
            assert any(f.startswith("futex_wait") for f in frames[2:split]), frames
            assert any(f.startswith("futex_wake") for f in frames[split + 1 :]), frames
    for wakee, waker, truth in (
        ("ponger", "pinger", pinger_woke),
        ("pinger", "ponger", ponger_woke),
    ):
        assert pairs[(wakee, waker)] > 0
        # A wake-up of a thread not yet switched out is no blocking: at most the truth.
        assert 0.5 * truth <= counts[(wakee, waker)] <= truth + 2, (wakee, waker, counts, truth)

    # The programs ran at least once per blocking recorded (a switch-in each) and per wake-up.
    cost = watch.result("offwake")
    assert cost is not None and "unavailable" not in cost, cost
    runs = {p["name"]: p["run_cnt"] for p in cost["programs"]}
    assert runs["ow_switch"] >= totals["blocks"]
    assert runs["ow_waking"] >= counts[("ponger", "pinger")] + counts[("pinger", "ponger")]
    assert cost["run_cnt"] == sum(runs.values())
    assert 0 < cost["run_time_ns"] <= cost["window_ns"] * cost["cpus"]
    assert cost["ns_per_run"] == cost["run_time_ns"] / cost["run_cnt"]


@pytest.mark.e2e
def test_event_executor_is_woken_by_the_client_threads(
    collectors: Path, harness_env: dict[str, str]
) -> None:
    """The lettuce picture: event-exec-N threads block in their task queue and are woken by the
    client threads handing them work (a cancellation's removal task, a schedule)."""
    env = {**harness_env, "HARNESS_WORKLOADS": str(ROOT / "workloads")}
    args = ["run", "timers", "--strategies", "none,event-executor", "--probes", "offwake"]
    args += ["--param", "concurrency=64", "--duration-s", "0.5", "--warmup-s", "0.2"]
    done = run_harness([*args, "--repeat", "1"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    run = only_run(env)
    run_dir = runs_dir(env) / run["run_id"]
    cell = next(c for c in run["cells"] if c["strategy"] == "event-executor")
    profile = cell["profile"]
    assert (run_dir / profile["offwake_svg"]).is_file()
    assert (run_dir / profile["offwake_diff_svg"]).is_file()  # against the `none` cell
    stacks: Counter[str] = Counter()
    for line in (run_dir / profile["offwake_folded"]).read_text().splitlines():
        stack, _, ns = line.rpartition(" ")
        stacks[stack] += int(ns)
    assert sum(stacks.values()) == profile["offwake_ns"]
    pairs = waker_pairs(stacks)
    executors = {w: ns for (b, w), ns in pairs.items() if b.startswith("event-exec")}
    assert executors, pairs
    # The executors' wakers are the client's threads, most of their blocked time.
    clients = sum(ns for waker, ns in executors.items() if waker == "timers-client")
    assert clients > 0.5 * sum(executors.values()), executors
    probe = cell["probes"]["offwake"]
    assert probe["bpf_stats"]["run_cnt"] >= probe["totals"]["blocks"]
