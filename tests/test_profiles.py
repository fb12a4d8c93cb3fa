"""Profiles: folded-stack figures (unit), the oncpu probe's window (real perf), and a real
timers run with flame graphs, differential graphs, off-CPU graphs and mutex_share, opened in
headless Chromium; `harness compare` on two real runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from browser import check_links, check_svg_drawn, require_browser, start_driver
from conftest import FIXTURES, run_harness, runs_dir
from cputime import CpuTrace, clock_tick_ns, cpu_ns, steal_ns, wait_for_cpu
from requirements import need

from harness.errors import BadInput
from harness.paths import REPO_ROOT
from harness.probes.availability import perf_problem, privilege_problem
from harness.probes.drivers.oncpu import OncpuProbe
from harness.probes.probe import ATTACH_TIMEOUT_S
from harness.probes.spec import ProbeSpec
from harness.profiles import folded, inferno
from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS, parse_patterns
from harness.profiles.settings import ProfileSettings
from harness.suites import discover

FIXTURE_CC = ["gcc", "-O1", "-g", "-fno-omit-frame-pointer"]
# The CPU time the phases fixture spins in each phase of the window test.
PHASE_CPU_NS = 600_000_000


def expected_samples(cpu: int, frequency_hz: int) -> float:
    """perf's cpu-clock event at -F N samples a task every 1/N s of its own CPU time."""
    return cpu / 1e9 * frequency_hz


STACKS = """\
client-10;main;work;std::sync::Mutex::lock_contended;syscall;do_futex_[k] 30
client-10;main;work;compute 50
client-10;main;idle;park_condvar 20
server-11;main;serve;recv 40
"""


@pytest.mark.unit
def test_folded_parse_render_round_trip() -> None:
    stacks = folded.parse(STACKS + "garbage line\n\nno;weight x\n")
    assert folded.total(stacks) == 140
    assert folded.parse(folded.render(stacks)) == stacks


@pytest.mark.unit
def test_pid_roots_split_and_merge() -> None:
    per_pid = folded.split_pid_roots(folded.parse(STACKS))
    assert set(per_pid) == {10, 11}
    assert folded.total(per_pid[10]) == 100
    assert "client;main;work;compute" in per_pid[10]
    merged = folded.merge([per_pid[10], per_pid[10]])
    assert merged["client;main;work;compute"] == 100


@pytest.mark.unit
def test_mutex_share_counts_each_stack_once_and_skips_the_root() -> None:
    client = folded.split_pid_roots(folded.parse(STACKS))[10]
    # futex/mutex (30) and condvar (20) of 100; one stack with two matches counts once.
    assert folded.share_matching(client, DEFAULT_MUTEX_PATTERNS) == pytest.approx(0.5)
    assert folded.share_matching(client, ["compute"]) == pytest.approx(0.5)
    # The root frame is the process name: a process called "mutexd" is not a lock.
    assert folded.share_matching(Counter({"mutexd;main;run": 5}), ["mutex"]) == 0.0
    assert folded.share_matching(Counter(), ["mutex"]) is None


@pytest.mark.unit
def test_kernel_spinlocks_are_not_lock_frames() -> None:
    stacks = Counter({"c;send;__pv_queued_spin_lock_slowpath_[k]": 1, "c;a;b": 1})
    assert folded.share_matching(stacks, DEFAULT_MUTEX_PATTERNS) == 0.0


@pytest.mark.unit
def test_top_self_and_grew_most() -> None:
    base = Counter({"c;main;compute": 80, "c;main;lock": 20})
    cand = Counter({"c;main;compute": 50, "c;main;lock": 40, "c;main;timer": 10})
    top = folded.top_self(cand, 2)
    assert [t["frame"] for t in top] == ["compute", "lock"]
    assert top[0]["share"] == pytest.approx(0.5)
    grew = folded.grew_most(base, cand)
    assert [g["frame"] for g in grew] == ["lock", "timer"]  # compute shrank: not listed
    assert grew[0]["delta"] == pytest.approx(0.4 - 0.2)
    assert grew[1]["baseline_share"] == 0.0


@pytest.mark.unit
def test_mutex_patterns_option() -> None:
    assert parse_patterns("Foo, bar") == ("foo", "bar")
    extended = parse_patterns("+mylock")
    assert extended[: len(DEFAULT_MUTEX_PATTERNS)] == DEFAULT_MUTEX_PATTERNS
    assert extended[-1] == "mylock"
    with pytest.raises(BadInput):
        parse_patterns(" , ")


@pytest.mark.unit
def test_perf_missing_is_a_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert perf_problem() == "perf is not installed (apt install linux-perf)"


def require_oncpu() -> None:
    need(privilege_problem() or perf_problem())
    problem = inferno.problem()
    if problem:
        pytest.fail(f"{problem}: `make deps` installs it")


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = tmp_path_factory.mktemp("profile") / "phases"
    subprocess.run(
        [*FIXTURE_CC, "-o", str(binary), str(FIXTURES / "profile" / "phases.c")],
        check=True,
        timeout=60,
    )
    return binary


@pytest.mark.bpf
def test_oncpu_samples_the_window_only(phases: Path, tmp_path: Path) -> None:
    """Samples before window_start are dropped: the fixture spins in one function before the
    window and in another during it."""
    require_oncpu()
    target = subprocess.Popen(
        [str(phases)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert target.stdin is not None and target.stdout is not None
    try:
        assert target.stdout.readline().split() == ["ready", str(target.pid)]
        probe = OncpuProbe(ProbeSpec("oncpu"), tmp_path / "r1-oncpu.json", ProfileSettings())
        probe.start([target.pid])
        probe.wait_attached(time.monotonic() + ATTACH_TIMEOUT_S, None)
        assert probe.unavailable is None
        # Spinning in before_window(), not sampled: for a given CPU time, however long a
        # loaded machine takes to give it.
        wait_for_cpu(target.pid, cpu_ns(target.pid), PHASE_CPU_NS // 2)
        target.stdin.write("go\n")
        target.stdin.flush()
        steal_start, outer_start = steal_ns(), cpu_ns(target.pid)
        wall_start = time.monotonic()
        probe.window_start()  # returns once perf has acknowledged `enable`
        inner_start = cpu_ns(target.pid)
        inner_end = wait_for_cpu(target.pid, inner_start, PHASE_CPU_NS)
        probe.window_end()  # returns once perf has acknowledged `disable`
        outer_end, steal_end = cpu_ns(target.pid), steal_ns()
        wall_s = time.monotonic() - wall_start
        result = probe.finish()
    finally:
        target.kill()
        target.wait()
    assert result.ok, result.error
    assert result.data is not None and result.path is not None
    stacks = folded.read(result.path.parent / result.data["folded"])
    phase_weight: Counter[str] = Counter()
    for stack, weight in stacks.items():
        for frame in ("before_window", "inside_window"):
            if frame in stack.split(";"):
                phase_weight[frame] += weight
    # One sample per 1/99 s of the fixture's CPU time while perf was enabled: at least the
    # CPU time between the acknowledgements, at most that around them (bar the sampling
    # clock's phase at each edge); a sample or two may straddle the switch of phases. The
    # cpu-clock's timer also runs while the hypervisor steals the vCPU from the fixture, which
    # its run time leaves out: at most the machine's steal time meanwhile (to a tick a CPU).
    hz = result.data["frequency_hz"]
    assert hz == ProfileSettings().frequency_hz
    at_least = expected_samples(inner_end - inner_start, hz)
    stolen = steal_end - steal_start + (os.cpu_count() or 1) * clock_tick_ns()
    at_most = expected_samples(outer_end - outer_start + stolen, hz)
    # Unacknowledged, the window's edges are not where the CPU times were read.
    assert result.data["notes"] == [], result.data["notes"]
    assert 0.9 * at_least - 2 <= phase_weight["inside_window"] <= at_most + 2, {
        "samples": phase_weight,
        "at_least": at_least,
        "at_most": at_most,
        "inner_ms": (inner_end - inner_start) / 1e6,
        "outer_ms": (outer_end - outer_start) / 1e6,
        "steal_ms": (steal_end - steal_start) / 1e6,
        "wall_s": wall_s,
    }
    assert phase_weight["before_window"] <= 3, stacks
    assert result.data["samples"] == folded.total(stacks)
    assert all(stack.startswith(f"phases-{target.pid};") for stack in stacks)
    assert not list(tmp_path.glob("*.perf.data*")), "perf.data is deleted once collapsed"


@pytest.fixture
def profile_env(harness_env: dict[str, str]) -> dict[str, str]:
    require_oncpu()
    if not discover(REPO_ROOT / "workloads")["timers"].built:
        pytest.fail("the timers workload is not built: run `make deps`")
    return {**harness_env, "HARNESS_WORKLOADS": str(REPO_ROOT / "workloads")}


TIMERS_PROFILED = [
    "run",
    "timers",
    "--strategies",
    "none,tokio-timeout,deadline-tracker",
    "--probes",
    "oncpu,futex,sched",
    "--param",
    "concurrency=256",
    "--duration-s",
    "1.5",
    "--warmup-s",
    "0.5",
    "--repeat",
    "1",
]


def profiled_run(env: dict[str, str]) -> tuple[Path, dict[str, Any]]:
    before = set(runs_dir(env).iterdir()) if runs_dir(env).exists() else set()
    done = run_harness(TIMERS_PROFILED, env, timeout=240)
    assert done.returncode == 0, done.stderr
    (run_dir,) = set(runs_dir(env).iterdir()) - before
    # oncpu and futex run on the explain repeat: the table's figures are those of sched's
    # (counters only) repeats.
    assert "figures: the measurement repeats (sched)" in done.stdout
    assert "mutex %" not in done.stdout
    assert f"report.html: {run_dir / 'report.html'}" in done.stdout
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return run_dir, doc


@pytest.mark.bpf
@pytest.mark.browser
@pytest.mark.e2e
def test_profiled_run_draws_every_graph(profile_env: dict[str, str]) -> None:
    require_browser()
    run_dir, doc = profiled_run(profile_env)
    assert doc["config"]["mutex_patterns"] == list(DEFAULT_MUTEX_PATTERNS)
    profiles = {cell["strategy"]: cell["profile"] for cell in doc["cells"]}
    assert set(profiles) == {"none", "tokio-timeout", "deadline-tracker"}
    svgs = []
    for strategy, profile in profiles.items():
        for key in ("svg", "offcpu_svg", "wakeup_svg", "folded", "offcpu_folded"):
            assert (run_dir / profile[key]).is_file(), (strategy, key, profile["notes"])
        svgs += [profile["svg"], profile["offcpu_svg"], profile["wakeup_svg"]]
        assert 0 <= profile["mutex_share"] <= 1
        assert profile["client_samples"] > 0 and profile["samples"] >= profile["client_samples"]
        assert len(profile["top_self"]) == 10
        oncpu = folded.read(run_dir / profile["folded"])
        assert folded.total(oncpu) == profile["samples"]
        assert {stack.split(";")[0] for stack in oncpu} >= {"timers-client", "timers-server"}
        assert any(frame.endswith("_[k]") for stack in oncpu for frame in stack.split(";"))
        # Rust frames are demangled.
        assert any("tokio::runtime" in stack for stack in oncpu)
        title = (run_dir / profile["svg"]).read_text()
        assert f"timers: {strategy}, on-CPU" in title and f"{profile['samples']} samples" in title
        cell = next(c for c in doc["cells"] if c["strategy"] == strategy)
        assert cell["explain_summary"]["mutex_share"]["n"] == 1
        assert "mutex_share" not in cell["summary"]
    assert "diff_svg" not in profiles["none"]
    for strategy in ("tokio-timeout", "deadline-tracker"):
        profile = profiles[strategy]
        assert profile["diff_baseline"] == "none/concurrency=256"
        assert (run_dir / profile["diff_svg"]).is_file()
        svgs.append(profile["diff_svg"])
    assert (run_dir / "summary.md").is_file()
    driver = start_driver()
    try:
        for svg in svgs:
            assert check_svg_drawn(driver, run_dir / svg) > 5, svg
        check_links(driver, run_dir / "report.html")
    finally:
        driver.quit()


@pytest.mark.bpf
@pytest.mark.e2e
def test_compare_two_real_runs(profile_env: dict[str, str]) -> None:
    first, _ = profiled_run(profile_env)
    second, _ = profiled_run(profile_env)
    done = run_harness(["compare", str(first), str(second), "--wide"], profile_env)
    assert done.returncode == 0, done.stderr
    assert "ops_per_sec" in done.stdout and "ctx_switches_per_op" in done.stdout
    graphs = sorted((second / "compare").glob("*/*.diff.svg"))
    assert len(graphs) == 3, done.stdout
    assert all(str(graph) in done.stdout for graph in graphs)
    done = run_harness(["compare", str(first), str(second), "--json"], profile_env)
    entries = json.loads(done.stdout)
    assert {e["metric"] for e in entries} >= {"ops_per_sec", "ctx_switches_per_op"}


@pytest.mark.bpf
def test_harness_probe_prints_the_folded_stacks(phases: Path, harness_env: dict[str, str]) -> None:
    """`harness probe --probes oncpu`: the stacks inline in its JSON (no run directory)."""
    require_oncpu()
    target = subprocess.Popen(
        [str(phases)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert target.stdin is not None and target.stdout is not None
    try:
        target.stdout.readline()
        target.stdin.write("go\n")
        target.stdin.flush()
        args = ["probe", "--pid", str(target.pid), "--probes", "oncpu", "--duration-s", "1"]
        with CpuTrace(target.pid) as trace:
            done = run_harness([*args, "--json"], harness_env)
    finally:
        target.kill()
        target.wait()
    assert done.returncode == 0, done.stderr
    oncpu = json.loads(done.stdout)["probes"]["oncpu"]
    stacks = folded.parse("\n".join(oncpu["folded"]))
    # The fixture spun all along, getting what CPU a loaded machine gave it. perf was enabled
    # for a window of at least the 1 s asked for, somewhere inside the command: one sample per
    # 1/99 s of the fixture's CPU time in it, which is at least the least CPU time it had in
    # any second of the command and at most its CPU time over the whole command.
    hz = oncpu["frequency_hz"]
    at_least = expected_samples(trace.least_within(1.0), hz)
    at_most = expected_samples(trace.total_ns(), hz)
    assert folded.total(stacks) == oncpu["samples"] > 0
    assert 0.9 * at_least - 2 <= oncpu["samples"] <= at_most + 2, (oncpu["samples"], trace.points)
    assert oncpu["top_self"][0]["frame"] == "inside_window"
    assert oncpu["mutex_share"] == 0.0
