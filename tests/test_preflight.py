"""Bad input caught before anything starts: the workload's own `check`, the lock taken only
after validation, perf's frequency against the kernel's limit, an unwritable --out; and the
checks a repeat's result gets (bad metrics, a long line read in linear time)."""

from __future__ import annotations

import json
import math
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import FIXTURES, run_harness, runs_dir, sleepy_log
from requirements import need, root_problem, tool_problem

from harness.base.stop import StopFlag
from harness.probes.drivers.oncpu import perf_reason
from harness.probes.drivers.perfrate import (
    MAX_SAMPLE_RATE,
    check_frequency,
    kernel_max,
    used_frequency,
)
from harness.run.repeat import run_repeat
from harness.run.resultcheck import result_problem
from harness.runlock import RunLock

pytestmark = pytest.mark.unit

SHORT = ["--duration-s", "0.1", "--warmup-s", "0", "--repeat", "5"]
DECLARED = [{"name": "ops_per_sec"}, {"name": "latency_ns.p99"}]


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def assert_nothing_started(env: dict[str, str]) -> None:
    assert not runs_dir(env).exists() or not any(runs_dir(env).iterdir())
    assert sleepy_log(env) == []  # no `sleepy.py run` at all


@pytest.mark.parametrize("window", [["--duration-s", "86401"], ["--warmup-s", "100000"]])
def test_a_window_only_the_workload_rejects_stops_the_run_at_once(
    harness_env: dict[str, str], window: list[str]
) -> None:
    done = run_harness(
        ["run", "sleepy", "--repeat", "5", "--duration-s", "0.1", *window], harness_env
    )
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert "suite 'sleepy', cell slow" in line and "bad window" in line
    assert_nothing_started(harness_env)


def test_bad_input_is_exit_2_while_another_run_holds_the_lock(
    harness_env: dict[str, str],
) -> None:
    with RunLock(Path(harness_env["HARNESS_LOCK"]), "a test holding the lock"):
        bad = run_harness(["run", "sleepy", "--duration-s", "86401"], harness_env)
        good = run_harness(["run", "sleepy", *SHORT], harness_env)
    assert bad.returncode == 2 and "bad window" in one_error_line(bad.stderr)
    assert good.returncode == 3 and "another benchmark" in one_error_line(good.stderr)
    assert_nothing_started(harness_env)


def test_bench_checks_every_plan_before_it_starts(harness_env: dict[str, str]) -> None:
    done = run_harness(["bench", "--suites", "sleepy,nope"], harness_env)
    assert done.returncode == 2
    one_error_line(done.stderr)
    assert_nothing_started(harness_env)


def test_a_perf_frequency_above_the_kernel_limit_is_bad_input(
    harness_env: dict[str, str],
) -> None:
    limit = kernel_max()
    need(None if limit is not None else f"{MAX_SAMPLE_RATE} is not readable here")
    done = run_harness(["run", "sleepy", *SHORT, "--perf-frequency", "100000000"], harness_env)
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert f"limit of {limit} Hz" in line and str(MAX_SAMPLE_RATE) in line
    assert_nothing_started(harness_env)


def test_check_frequency_reads_the_limit(tmp_path: Path) -> None:
    limit = tmp_path / "max"
    limit.write_text("25000\n")
    check_frequency(25000, limit)
    with pytest.raises(Exception, match="use at most 25000"):
        check_frequency(25001, limit)
    check_frequency(10**9, tmp_path / "absent")  # no perf events here: nothing to bound


def test_the_frequency_used_is_the_one_perf_throttled_to() -> None:
    warning = (
        "warning: Maximum frequency rate (25,000 Hz) exceeded, throttling from 100,000 Hz "
        "to 25,000 Hz."
    )
    assert used_frequency(100000, ["Some line", warning]) == 25000
    assert used_frequency(99, ["[ perf record: Woken up 1 times ]"]) == 99


def test_perf_keeps_the_reason_after_its_bare_error_line() -> None:
    lines = [
        "Error:",
        "The sys_perf_event_open() syscall returned with 22 (Invalid argument) for event "
        "(cpu-clock).",
        '"dmesg | grep -i perf" may provide additional information.',
        "more",
    ]
    reason = perf_reason(lines, "fallback")
    assert reason.startswith("Error: The sys_perf_event_open() syscall returned with 22")
    assert "dmesg" in reason and "more" not in reason
    assert perf_reason([], "fallback") == "fallback"


def test_an_out_dir_on_a_pseudo_filesystem_is_refused_up_front(
    harness_env: dict[str, str],
) -> None:
    done = run_harness(["run", "sleepy", *SHORT, "--out", "/sys/kernel"], harness_env)
    assert done.returncode == 2
    assert "cannot write in /sys/kernel" in one_error_line(done.stderr)
    assert_nothing_started(harness_env)


def test_an_unwritable_out_dir_for_a_user_is_refused_up_front(
    harness_env: dict[str, str],
) -> None:
    need(root_problem("to drop to an unprivileged user"))
    need(tool_problem("setpriv", "util-linux"))
    home = Path(tempfile.mkdtemp(prefix="harness-user-"))  # pytest's folders are root's only
    try:
        home.chmod(0o755)
        closed = home / "closed"
        closed.mkdir(mode=0o755)  # root's: others may enter, not write
        # A copy of the suite nobody may run by its permissions alone: the harness checks the
        # binary with access(2), which ignores capabilities.
        workloads = home / "workloads"
        shutil.copytree(FIXTURES / "sleepy", workloads / "sleepy")
        env = {**harness_env, "HOME": str(home), "HARNESS_WORKLOADS": str(workloads)}
        # nobody, allowed to read and search any folder (CAP_DAC_READ_SEARCH), so that this
        # venv and checkout serve it wherever they are (a clone in a 0700 mktemp folder, a
        # Python under /root), and to write nothing it does not own.
        nobody = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all,+dac_read_search",
            "--ambient-caps=+dac_read_search",
        ]
        args = ["run", "sleepy", *SHORT, "--out", f"{closed}/runs"]
        done = subprocess.run(
            [*nobody, sys.executable, "-m", "harness", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        line = one_error_line(done.stderr)
        assert f"cannot write in {closed}: Permission denied" in line
        assert not (closed / "runs").exists()
    finally:
        shutil.rmtree(home)


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"ops_per_sec": 5.0, "latency_ns": {"p99": 3}}, None),
        ({"latency_ns": {"p99": 3}}, None),  # a metric a strategy does not report
        ({"ops_per_sec": "fast"}, "metric 'ops_per_sec' is not a number: 'fast'"),
        ({"ops_per_sec": True}, "metric 'ops_per_sec' is not a number: True"),
        ({"ops_per_sec": math.nan}, "metric 'ops_per_sec' is nan"),
        ({"ops_per_sec": 1.0, "latency_ns": {"p99": -math.inf}}, "'latency_ns.p99' is -inf"),
        ({"ops_per_sec": -1.0}, "metric 'ops_per_sec' is negative: -1.0"),
        ({"ops_per_sec": 1.0, "hist": [1, math.inf]}, "'hist[1]' is inf"),
    ],
)
def test_bad_metrics_are_named(result: dict[str, object], problem: str | None) -> None:
    found = result_problem(result, DECLARED)
    assert (found is None) if problem is None else (found is not None and problem in found)


def workload(tmp_path: Path, result_line: str) -> Path:
    path = tmp_path / "bench.py"
    path.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        'print(\'{"event":"ready","pids":[1]}\', flush=True)\n'
        "sys.stdin.readline()\n"
        'print(\'{"event":"measure_start"}\')\n'
        'print(\'{"event":"measure_end"}\')\n'
        f"sys.stdout.write({result_line})\n"
    )
    path.chmod(0o755)
    return path


def sleepy_with(suite: Path, old: str, new: str) -> Path:
    """A copy of the sleepy suite at `suite` whose sleepy.py has `new` for its one `old`."""
    shutil.copytree(FIXTURES / "sleepy", suite)
    script = (suite / "sleepy.py").read_text()
    assert script.count(old) == 1, old
    (suite / "sleepy.py").write_text(script.replace(old, new))
    return suite


def test_a_nan_from_the_workload_fails_the_repeat_in_a_run(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    """Python's json reads NaN: the run's repeat fails with the reason instead of counting."""
    suite = sleepy_with(tmp_path / "nanbench", "ops_per_sec=ops,", "ops_per_sec=math.nan,")
    done = run_harness(["run", str(suite), "--strategies", "slow", *SHORT[:4]], harness_env)
    assert done.returncode == 1, done.stderr
    run_json = next(runs_dir(harness_env).iterdir()) / "run.json"
    doc = json.loads(run_json.read_text())
    assert doc["status"] == "failed"
    errors = [f["error"] for c in doc["cells"] for f in c["failures"]]
    assert errors and all("metric 'ops_per_sec' is nan" in e for e in errors), errors


def cpu_seconds_reading(tmp_path: Path, megabytes: int) -> float:
    """The harness's own CPU time to read a result line of `megabytes` through run_repeat."""
    blob = tmp_path / f"blob{megabytes}.json"
    blob.write_text(json.dumps({"event": "result", "pad": "x" * (megabytes * 1_000_000)}) + "\n")
    bench = workload(tmp_path, f"open({str(blob)!r}).read()")
    before = resource.getrusage(resource.RUSAGE_SELF)
    outcome = run_repeat(bench, tmp_path, [], 600, StopFlag())
    after = resource.getrusage(resource.RUSAGE_SELF)
    assert outcome.ok, outcome.error
    assert outcome.result is not None and len(outcome.result["pad"]) == megabytes * 1_000_000
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_a_long_result_line_is_read_in_linear_time(tmp_path: Path) -> None:
    """10 x the length costs about 10 x the CPU, not 100 x (a generous bound: 30 x)."""
    small = max(cpu_seconds_reading(tmp_path, 5), 0.02)
    large = cpu_seconds_reading(tmp_path, 50)
    assert large < 30 * small, (small, large)


def test_a_workload_s_nan_is_not_a_successful_repeat(tmp_path: Path) -> None:
    bench = workload(tmp_path, repr('{"event":"result","ops_per_sec":NaN}\n'))
    outcome = run_repeat(bench, tmp_path, [], 600, StopFlag())
    assert outcome.ok  # the protocol is kept; the runner vets the metrics (above)
    problem = result_problem(outcome.result or {}, DECLARED)
    assert problem == "bad result: metric 'ops_per_sec' is nan"


def test_a_repeat_s_exit_2_before_ready_stops_the_run_at_once(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    """A `check` that lets bad input through: the first repeat's exit 2 ends the run."""
    suite = sleepy_with(tmp_path / "lax", "        parse_run(sys.argv[2:])\n", "        pass\n")
    done = run_harness(["run", str(suite), "--duration-s", "86401", "--repeat", "5"], harness_env)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr)
    assert "cell slow: the workload rejected its input: bad window 86401 s" in line
    assert not runs_dir(harness_env).exists() or not any(runs_dir(harness_env).iterdir())
