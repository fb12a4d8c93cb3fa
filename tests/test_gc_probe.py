"""bpf/build/gc (Go stop-the-world pauses, GC cycles; uprobes) against the Go runtime's counts.

The target is the Go fixture in tests/fixtures/gcprog, built here unstripped and stripped. It is
driven one stdin line per phase, allocates nothing between phases (so no GC starts there), and
reports the runtime's counters over each phase. Skipped only where BPF or Go cannot be used (no
kernel BTF, no Go toolchain, or the collector reports `unavailable:` for a reason other than the
target, or no bpftool); with REQUIRE_BPF=1 such a skip fails (requirements.need).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from bpftool import held_ids, left_behind, named
from collectorprocs import (
    BAD_ARGUMENTS,
    BUILD,
    LineProcess,
    WindowCollector,
    build_collectors,
    refuses_arguments,
)
from requirements import need, tool_problem, unmet

pytestmark = pytest.mark.bpf

GC = BUILD / "gc"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "gcprog"
PROG_PREFIX = "gc_"  # every BPF program of the collector is named so


@pytest.fixture(scope="session")
def gc_tool() -> Path:
    build_collectors()
    return GC


def go_tool() -> str | None:
    found = shutil.which("go")
    if found:
        return found
    fallback = Path("/usr/local/go/bin/go")
    return str(fallback) if fallback.exists() else None


@pytest.fixture(scope="session")
def gcprog(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixture built as is and stripped (-s -w: no .symtab, no DWARF)."""
    go = go_tool()
    if go is None:
        unmet("no Go toolchain (go) to build tests/fixtures/gcprog")
    out = tmp_path_factory.mktemp("gcprog")
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    binaries = {"plain": out / "gcprog", "stripped": out / "gcprog-stripped"}
    for flags, binary in ((["-ldflags=-s -w"], binaries["stripped"]), ([], binaries["plain"])):
        subprocess.run(
            [go, "build", *flags, "-o", str(binary), "."],
            cwd=FIXTURE,
            env=env,
            check=True,
            timeout=180,
        )
    return binaries


class GoTarget(LineProcess):
    """The gcprog fixture: prints "ready PID", runs one phase per "go" line."""

    def __init__(self, binary: Path) -> None:
        super().__init__([str(binary)], stdin=True, timeout=30, keep_stderr=True)
        assert self.next_line() == f"ready {self.pid}"

    def phase(self) -> dict[str, Any]:
        """Runs the measured phase; returns the runtime's counts over it."""
        self.send("go")
        line = self.next_line()
        assert line is not None and line.startswith("done "), line
        truth: dict[str, Any] = json.loads(line[len("done ") :])
        return truth


class GcCollector(WindowCollector):
    """bpf/build/gc writing its JSON to a file, once attached."""

    def __init__(self, pids: list[int], out: Path, *extra: str) -> None:
        super().__init__([str(GC)], pids, out, *extra, timeout=30, keep_stderr=True)

    def attached(self, line: str | None) -> None:
        if line is None:
            rc = self.proc.wait(timeout=30)
            stderr = self.stderr()
            if rc == 1 and stderr.startswith("unavailable:"):
                unmet(f"the kernel does not run the probes: {stderr.strip()}")
            raise AssertionError(f"gc exited {rc} before attaching: {stderr}")
        assert line == '{"event":"attached"}', line

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> dict[str, Any]:
        self.proc.send_signal(sig)
        return self.result()

    def result(self) -> dict[str, Any]:
        rc = self.finish()
        assert rc == 0, self.stderr()
        result: dict[str, Any] = json.loads(self.out.read_text())
        assert result["lost_events"] == 0, result["lost_events"]
        assert result["unpaired_starts"] == 0, result["unpaired_starts"]
        return result


def check_consistent(process: dict[str, Any]) -> None:
    """The all / GC / other figures and the per-reason rows agree with each other."""
    for kind in ("stw", "gc_stw", "other_stw"):
        assert sum(process[f"{kind}_hist_log2_ns"]) == process[f"{kind}_pauses"], kind
        assert process[f"{kind}_max_ns"] <= process[f"{kind}_total_ns"], kind
    for field in ("pauses", "total_ns"):
        assert process[f"stw_{field}"] == process[f"gc_stw_{field}"] + process[f"other_stw_{field}"]
        for kind, gc in (("gc_stw", 1), ("other_stw", 0)):
            rows = [row for row in process["by_reason"] if row["gc"] == gc]
            assert process[f"{kind}_{field}"] == sum(row[field] for row in rows), (kind, field)
    assert process["stw_max_ns"] == max(process["gc_stw_max_ns"], process["other_stw_max_ns"])
    sweeps = [row for row in process["by_reason"] if row["code"] == 2]
    assert process["cycles"] == (sweeps[0]["stops"] if sweeps else 0)


def test_matches_the_runtime(
    gc_tool: Path, gcprog: dict[str, Path], tmp_path: Path, reap: list[LineProcess]
) -> None:
    """Over a window opened just before the measured phase and closed just after it: the
    runtime's GC cycles and pause counts exactly, its pause total (PauseTotalNs) within 10 %
    (exactly where the runtime's own timestamps are read); the phases before and after the
    window are left out."""
    target = GoTarget(gcprog["plain"])
    reap.append(target)
    collector = GcCollector([target.pid], tmp_path / "gc.json")
    reap.append(collector)
    target.phase()  # before the window
    outer_start = time.monotonic()
    assert collector.window(signal.SIGUSR1) == 0
    inner_start = time.monotonic()
    truth = target.phase()
    inner = time.monotonic() - inner_start
    window_ns = collector.window(signal.SIGUSR2)
    outer = time.monotonic() - outer_start
    target.phase()  # after the window
    result = collector.stop()

    assert result["probe"] == "gc"
    assert result["attach"] == "uprobe"
    assert result["pids"] == [target.pid]
    assert result["window_ns"] == window_ns
    assert inner * 1e9 < window_ns < outer * 1e9
    (process,) = result["processes"]
    assert (process["pid"], process["comm"]) == (target.pid, "gcprog")
    assert process["exe"] == str(gcprog["plain"])
    assert process["go_version"] == truth["go_version"]
    check_consistent(process)

    # The phase had both kinds of cycle, and the runtime's two counts agree.
    assert truth["automatic_cycles"] >= 1 and truth["forced_cycles"] >= 1, truth
    assert truth["cycles"] == truth["num_gc"] >= 5, truth
    assert process["cycles"] == truth["cycles"]
    # Sweep termination and mark termination: at least two per cycle.
    assert process["gc_stw_pauses"] == truth["gc_pauses"]
    assert process["gc_stw_pauses"] >= 2 * process["cycles"]
    # The fixture's two ReadMemStats calls, told apart from GC pauses by their reason.
    assert process["other_stw_pauses"] == truth["other_pauses"] == 2
    reasons = {row["reason"]: row for row in process["by_reason"]}
    assert reasons["read mem stats"]["pauses"] == 2
    assert reasons["read mem stats"]["gc"] == 0
    assert reasons["GC sweep termination"]["pauses"] == process["cycles"]

    runtime_ns = truth["pause_total_ns"]
    assert runtime_ns > 0
    assert abs(process["gc_stw_total_ns"] - runtime_ns) <= 0.1 * runtime_ns, (process, truth)
    if platform.machine() == "x86_64":
        # The pauses are timed from the runtime's own nanotime() values (worldStop and the
        # `now` of startTheWorldWithSema), which PauseTotalNs sums too.
        assert result["probe_timed_pauses"] == 0
        assert process["gc_stw_total_ns"] == runtime_ns

    totals = result["totals"]
    for key in ("cycles", "stw_pauses", "stw_total_ns", "gc_stw_total_ns", "other_stw_pauses"):
        assert totals[key] == process[key], key
    assert totals["stw_hist_log2_ns"] == process["stw_hist_log2_ns"]


def test_only_the_targets(
    gc_tool: Path, gcprog: dict[str, Path], tmp_path: Path, reap: list[LineProcess]
) -> None:
    """Two processes of the same executable, both targets: each gets its own counts; a third,
    not a target, collecting garbage at the same time, is not counted."""
    busy, idle, other = (GoTarget(gcprog["plain"]) for _ in range(3))
    reap.extend((busy, idle, other))
    collector = GcCollector([busy.pid, idle.pid, busy.pid], tmp_path / "gc.json", "--now")
    reap.append(collector)
    truth = busy.phase()
    other.phase()
    result = collector.stop(signal.SIGINT)
    processes = {process["pid"]: process for process in result["processes"]}
    assert set(processes) == {busy.pid, idle.pid}
    assert processes[busy.pid]["cycles"] == truth["cycles"]
    assert processes[busy.pid]["gc_stw_pauses"] == truth["gc_pauses"]
    assert processes[idle.pid]["stw_pauses"] == processes[idle.pid]["cycles"] == 0
    assert processes[idle.pid]["by_reason"] == []
    assert result["totals"]["cycles"] == truth["cycles"]


def unavailable_run(gc_tool: Path, pid: int) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [str(gc_tool), "--pid", str(pid), "--now"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1, run.stderr
    return run


def test_stripped_binary_is_unavailable(
    gc_tool: Path, gcprog: dict[str, Path], reap: list[LineProcess]
) -> None:
    target = GoTarget(gcprog["stripped"])
    reap.append(target)
    run = unavailable_run(gc_tool, target.pid)
    assert run.stderr.startswith("unavailable: no symbols"), run.stderr
    assert str(gcprog["stripped"]) in run.stderr


def test_non_go_target_is_unavailable(gc_tool: Path, reap: list[LineProcess]) -> None:
    sleeper = LineProcess(["sleep", "30"])
    reap.append(sleeper)
    run = unavailable_run(gc_tool, sleeper.pid)
    assert run.stderr.startswith("unavailable: not a Go binary: "), run.stderr
    assert "sleep" in run.stderr
    # The reason is the executable's, not the process's: every repeat of a cell (and every
    # cell of a run) gives the same line, which the summary then prints once.
    assert str(sleeper.pid) not in run.stderr


@pytest.mark.parametrize("scenario", ["sigterm", "duration", "target-killed"])
def test_nothing_stays_loaded(
    gc_tool: Path,
    gcprog: dict[str, Path],
    tmp_path: Path,
    reap: list[LineProcess],
    scenario: str,
) -> None:
    need(tool_problem("bpftool", "bpftool"))
    before = named(PROG_PREFIX)
    target = GoTarget(gcprog["plain"])
    reap.append(target)
    extra = ("--now", "--duration-s", "2") if scenario == "duration" else ("--now",)
    collector = GcCollector([target.pid], tmp_path / "gc.json", *extra)
    reap.append(collector)
    progs, links = held_ids(collector.pid)
    assert progs, "the collector holds no BPF program"
    assert progs <= named(PROG_PREFIX) - before  # its own, loaded by it

    truth = target.phase()
    if scenario == "target-killed":
        target.proc.kill()
        target.proc.wait()
    result = collector.result() if scenario == "duration" else collector.stop()
    assert result["processes"][0]["cycles"] == truth["cycles"]
    assert left_behind(progs, links, PROG_PREFIX, before) == (set(), set(), set())


@pytest.mark.parametrize(
    "args",
    [*BAD_ARGUMENTS, ["--pid", "1", "--top", "3"], ["--pid", "1", "--attach", "raw_tp"]],
)
def test_bad_arguments_exit_2(gc_tool: Path, args: list[str]) -> None:
    refuses_arguments(gc_tool, args)
