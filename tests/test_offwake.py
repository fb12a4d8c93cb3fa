"""The offwake collector (bpf/build/offwake) and the BPF statistics of a probe's programs
(harness/probes/bpfstats.py), with real probes against the pingpong fixture: two threads
handing a turn back and forth over a futex, each woken by the other (its ground truth)."""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from bpftool import held_ids
from conftest import only_run, run_harness, runs_dir
from requirements import need, tool_problem
from test_bpf_collectors import (
    ROOT,
    Collector,
    LineProcess,
    Target,
    collectors,
    fixtures,
    reap,
)

from harness.probes.bpfstats import BpfStatsWatch
from harness.probes.kinds.offwake import SEPARATOR, folded_lines, waker_pairs

pytestmark = pytest.mark.bpf
__all__ = ["collectors", "fixtures", "reap"]  # the fixtures, shared with the collectors' tests
THREADS = 3  # the fixture's main thread, pinger, ponger
# Kernel frames of the collector's own programs and the tracepoint's calls into them.
TRACING_FRAMES = ("bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_")
# What a stack the collector could not keep reads as.
LOST_FRAMES = {"[stack lost: map collision]", "[stack lost]", "[no kernel stack]"}


def stackid_calls_by_program(pid: int) -> dict[str, int]:
    """bpf_get_stackid calls per program of a collector, in the code the verifier left."""
    progs, _ = held_ids(pid)
    calls: dict[str, int] = {}
    for prog_id in progs:
        shown = bpftool("-j", "prog", "show", "id", str(prog_id))
        code = bpftool("prog", "dump", "xlated", "id", str(prog_id))
        calls[json.loads(shown)["name"]] = code.count("call bpf_get_stackid")
    return calls


def bpftool(*args: str) -> str:
    return subprocess.run(
        ["bpftool", *args], capture_output=True, text=True, timeout=30, check=True
    ).stdout


def blocked_user_frames(frames: list[str]) -> list[str]:
    """The blocked side's stack, root first: between the state frame and the separator."""
    return frames[2 : frames.index(SEPARATOR)]


@pytest.mark.parametrize("kernel_stacks", [False, True], ids=["user-stacks", "kernel-stacks"])
def test_offwake_stacks_name_the_waker_and_the_bpf_stats_count_its_runs(
    collectors: Path,
    fixtures: dict[str, Path],
    tmp_path: Path,
    reap: list[LineProcess],
    kernel_stacks: bool,
) -> None:
    """User stacks by default, the kernel's too with --kernel-stacks: without it the programs
    do not even hold the kernel stack calls, and no frame is a kernel one. A sched collector
    on the same target puts a second program on sched_switch, so the tracepoint calls them
    through its iterator (`__traceiter_sched_switch`), which is left out of the stacks like
    the programs' own frames."""
    need(tool_problem("bpftool", "bpftool"))
    target = Target(fixtures["pingpong"])
    reap.append(target)
    beside = Collector("sched", [target.pid], tmp_path / "sched.json")
    reap.append(beside)
    extra = ["--kernel-stacks"] if kernel_stacks else []
    collector = Collector("offwake", [target.pid], tmp_path / "offwake.json", *extra)
    reap.append(collector)
    # The programs walk the user stacks themselves; bpf_get_stackid takes the kernel's.
    calls = stackid_calls_by_program(collector.pid)
    per_program = 1 if kernel_stacks else 0
    assert calls == {"ow_switch": per_program, "ow_waking": per_program, "ow_fork": 0, "ow_exit": 0}
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
    assert result["kernel_stacks"] is kernel_stacks

    stacks = folded_lines(result)
    totals = result["totals"]
    # Every blocking of the target's threads ends in the window, counted from its start.
    assert sum(stacks.values()) == totals["blocked_ns"]
    assert 0 < totals["blocked_ns"] <= THREADS * window_ns
    lost = result["lost_stacks"]
    assert set(lost) == {"collisions", "errors"}

    # Each thread is woken by the other, in futex_wake, while it waits in futex_wait: the
    # fixture's own function (`play`) and glibc's `syscall` at the top of both user stacks.
    # (Messages are the whole folded line: pytest cuts a list's repr at 240 characters.)
    pairs = waker_pairs(stacks)
    counts: Counter[tuple[str, str]] = Counter()
    lost_entries = 0
    for entry in result["stacks"]:
        folded = entry["folded"]
        frames = folded.split(";")
        assert SEPARATOR in frames, folded
        assert any(f.endswith("_[k]") for f in frames) is kernel_stacks or not kernel_stacks
        if not kernel_stacks:
            assert not any(f.endswith("_[k]") or f == "[no kernel stack]" for f in frames)
        assert not any(f.startswith(TRACING_FRAMES) for f in frames), folded
        counts[(frames[0], frames[-1])] += entry["count"]
        if (frames[0], frames[-1]) in (("pinger", "ponger"), ("ponger", "pinger")):
            split = frames.index(SEPARATOR)
            blocked, waker = frames[2:split], frames[split + 1 : -1]
            assert frames[1] == "[S sleeping]", folded
            assert "play" in blocked and "play" in waker, folded
            if any(f in LOST_FRAMES for f in blocked + waker):
                # A stack the map could not hold (a kernel stack whose bucket in the stack
                # map held another one, the CI failure's cause): counted below.
                lost_entries += 1
            elif kernel_stacks:
                # Innermost kernel frames: where the thread slept and where it woke the other.
                assert blocked[-1] == "__schedule_[k]", folded
                assert any(f.startswith("futex_wait") for f in blocked), folded
                assert waker[0] == "try_to_wake_up_[k]", folded
                assert any(f.startswith("futex_wake") for f in waker), folded
            else:
                assert blocked[-1] == waker[0] == "syscall", folded
    assert lost_entries <= totals["lost_stacks"], (lost_entries, lost)
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


def test_offwake_names_the_user_frames_of_a_target_gone_before_the_window_closed(
    collectors: Path, fixtures: dict[str, Path], tmp_path: Path, reap: list[LineProcess]
) -> None:
    """A workload may exit before the collector acts on the window's close (the harness closes
    it on the workload's `measure_end`): its stacks are still named, from the mappings read
    once attached, not `[unknown]`."""
    target = Target(fixtures["pingpong"])
    reap.append(target)
    collector = Collector("offwake", [target.pid], tmp_path / "offwake.json")
    reap.append(collector)
    collector.window(signal.SIGUSR1)
    target.phase("go")
    assert target.finish() == 0  # exited and reaped: its /proc/PID/maps is gone
    collector.window(signal.SIGUSR2)
    run = collector.stop()
    assert run.rc == 0
    named = 0
    for entry in run.result["stacks"]:
        frames = entry["folded"].split(";")
        # The players' futex waits: syscall() leaves the frame pointer chain whole (glibc's
        # own functions have none, so the main thread's stacks may hold `[unknown]`).
        if frames[0] in ("pinger", "ponger") and frames[1] == "[S sleeping]":
            blocked = blocked_user_frames(frames)
            assert "[unknown]" not in blocked and "play" in blocked, frames
            named += entry["count"]
    assert named > 0, run.result["stacks"]


def test_offwake_names_an_interrupt_as_the_waker_without_kernel_stacks(
    collectors: Path, fixtures: dict[str, Path], tmp_path: Path, reap: list[LineProcess]
) -> None:
    """The sleeper's 1 ms nanosleeps end in the hrtimer interrupt: the waker is `[interrupt]
    in <the task it hit>`, told from the interrupt context by the program, with no kernel
    stack to show it and no user stack of the task interrupted."""
    target = Target(fixtures["ctxsw"])
    reap.append(target)
    collector = Collector("offwake", [target.pid], tmp_path / "offwake.json")
    reap.append(collector)
    collector.window(signal.SIGUSR1)
    (sleeps,) = (int(word) for word in target.phase("go"))
    collector.window(signal.SIGUSR2)
    run = collector.stop()
    assert run.rc == 0
    woken: Counter[bool] = Counter()
    for entry in run.result["stacks"]:
        frames = entry["folded"].split(";")
        if frames[0] != "sleeper" or frames[1] != "[S sleeping]":
            continue
        if blocked_user_frames(frames)[-1:] != ["clock_nanosleep"]:
            continue  # its wait for the next phase, woken by another thread
        interrupt = frames[-1].startswith("[interrupt] in ")
        if interrupt:
            assert frames[-2] == SEPARATOR, frames  # no stack of the task interrupted
        woken[interrupt] += entry["count"]
    assert sleeps > 0 and woken[True] >= 0.9 * sum(woken.values()) > 0, (woken, sleeps)


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
