"""`harness probe --pid P` prints a section for every probe kind, with figures bounded by
what the target really did: the gc section against the Go fixture's own GC counts, the oncpu
section against the CPU time the target used, the bpftrace section's maps.

Skipped where the machine cannot load BPF or sample (no privilege, no BTF, no perf, no Go);
with REQUIRE_BPF=1 those skips fail.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_harness, start_harness
from cputime import SPINNERS
from requirements import need
from test_gc_probe import GoTarget, gc_tool, gcprog  # noqa: F401 (fixtures)

from harness.probes.availability import (
    bpftrace_problem,
    btf_problem,
    collector_problem,
    perf_problem,
    privilege_problem,
)

pytestmark = pytest.mark.bpf

FREQUENCY_HZ = 99  # the oncpu default
# perf's sampling clock may run a little ahead of the task clock it is compared with.
SAMPLE_SLACK = 1.5
TICKS_PER_S = 100  # USER_HZ of /proc/PID/stat


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def figure(pattern: str, text: str) -> int:
    """The count the pattern's group matches, written with or without thousands commas."""
    match = re.search(pattern, text)
    assert match, f"no {pattern!r} in:\n{text}"
    return int(match.group(1).replace(",", ""))


class Phases:
    """Runs the Go fixture's measured phase over and over in a thread, keeping its counts."""

    def __init__(self, target: GoTarget) -> None:
        self.target = target
        self.truths: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.is_set():
            self.truths.append(self.target.phase())

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=60)

    def total(self, key: str) -> int:
        return sum(int(t[key]) for t in self.truths)


@pytest.fixture
def go_target(gcprog: dict[str, Path]) -> Iterator[GoTarget]:  # noqa: F811
    target = GoTarget(gcprog["plain"])
    try:
        yield target
    finally:
        target.proc.kill()
        target.proc.wait()


@pytest.fixture
def burner() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", SPINNERS])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_gc_and_oncpu_sections_of_a_go_program(
    harness_env: dict[str, str],
    gc_tool: Path,  # noqa: F811 (builds the collectors)
    go_target: GoTarget,
) -> None:
    need(privilege_problem() or btf_problem() or collector_problem("gc") or perf_problem())
    pid = go_target.pid
    cpu_before = cpu_seconds(pid)
    phases = Phases(go_target)
    try:
        args = ["probe", "--pid", str(pid), "--probes", "gc,oncpu", "--duration-s", "2"]
        done = run_harness(args, harness_env, timeout=120)
    finally:
        phases.stop()
    cpu = cpu_seconds(pid) - cpu_before
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "window difference of None" not in text
    # The window saw some of the phases, never more than all of them.
    cycles = figure(r"gc totals: ([\d,]+) cycles", text)
    pauses = figure(r"GC pauses ([\d,]+) \(", text)
    assert 0 < cycles <= phases.total("cycles"), (cycles, phases.truths)
    assert 0 < pauses <= phases.total("gc_pauses"), (pauses, phases.truths)
    assert re.search(rf"│ {pid} │ .* │ +{cycles:,} │", text), text
    samples = figure(r"oncpu totals: ([\d,]+) samples at 99 Hz", text)
    assert 0 < samples <= cpu * FREQUENCY_HZ * SAMPLE_SLACK + 2, (samples, cpu)
    assert "oncpu: top 10 frames by self time" in text
    assert "runtime." in text  # Go's own frames, by name
    assert "mutex share" in text


def test_oncpu_json_and_bpftrace_section_of_a_cpu_burner(
    harness_env: dict[str, str], burner: int
) -> None:
    need(privilege_problem() or perf_problem() or bpftrace_problem())
    cpu_before = cpu_seconds(burner)
    args = ["probe", "--pid", str(burner), "--probes", "oncpu", "--duration-s", "1", "--json"]
    done = run_harness(args, harness_env, timeout=120)
    cpu = cpu_seconds(burner) - cpu_before
    assert done.returncode == 0, done.stderr
    oncpu = json.loads(done.stdout)["probes"]["oncpu"]
    assert 0 < oncpu["samples"] <= cpu * FREQUENCY_HZ * SAMPLE_SLACK + 2, (oncpu["samples"], cpu)
    assert sum(int(line.rsplit(" ", 1)[1]) for line in oncpu["folded"]) == oncpu["samples"]
    assert oncpu["top_self"] and 0 <= oncpu["mutex_share"] <= 1

    # A tracepoint script: pthread_mutex_contention.bt's uretprobes are lost now and then here
    # (see its header). The GIL's hand-overs are futex calls.
    script = "bt:bpf/syscalls_per_op.bt"
    done = run_harness(
        ["probe", "--pid", str(burner), "--probes", script, "--duration-s", "1"],
        harness_env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "bt:syscalls_per_op: window difference of " in done.stdout
    calls = re.search(r"@total = (\S+)", done.stdout)
    assert calls and calls.group(1) != "0", done.stdout


def test_gc_section_counts_what_the_runtime_counted(
    harness_env: dict[str, str],
    gc_tool: Path,  # noqa: F811 (builds the collectors)
    go_target: GoTarget,
) -> None:
    """One phase of the Go fixture inside the window (it starts GCs nowhere else): the
    section's cycles and GC pauses are the runtime's own counts."""
    need(privilege_problem() or btf_problem() or collector_problem("gc"))
    duration_s = 8  # far longer than a phase; checked below
    args = ["probe", "--pid", str(go_target.pid), "--probes", "gc", "--duration-s", str(duration_s)]
    probe = start_harness(args, harness_env, stdout=subprocess.PIPE)
    try:
        assert probe.stderr is not None
        line = probe.stderr.readline()
        assert line.startswith("harness: window open"), line + probe.stderr.read()
        opened = time.monotonic()
        truth = go_target.phase()
        assert time.monotonic() - opened < duration_s / 2, "the phase took most of the window"
        out, err = probe.communicate(timeout=120)
    finally:
        probe.kill()
        probe.wait()
    assert probe.returncode == 0, err
    assert truth["cycles"] > 0
    assert figure(r"gc totals: ([\d,]+) cycles", out) == truth["cycles"], out
    assert figure(r"GC pauses ([\d,]+) \(", out) == truth["gc_pauses"], out
