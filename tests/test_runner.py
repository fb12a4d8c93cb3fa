"""The runner against the sleepy fixture workload, through the real CLI in a subprocess."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    next_own_line,
    only_run,
    process_gone,
    run_harness,
    runs_dir,
    sleepy_log,
    start_harness,
)
from rich.console import Console
from rundocs import RUN_KEYS

from harness.base.stop import StopFlag
from harness.base.writes import write_json_atomic
from harness.run.progress import LineProgress, RichProgress, Step, make_progress
from harness.run.recorder import make_run_dir
from harness.run.repeat import Outcome, run_repeat

pytestmark = pytest.mark.unit

CELL_KEYS = {
    "id",
    "strategy",
    "scenario",
    "params",
    "resolved_params",
    "repeats",
    "failures",
    "summary",
    "probes",
    "profile",
}
SHORT = ["--duration-s", "0.1", "--warmup-s", "0"]


def ops(cell: dict[str, Any]) -> list[float]:
    return [r["ops_per_sec"] for r in cell["repeats"]]


def test_sweep_runs_every_cell_interleaved_and_json_is_pure(harness_env: dict[str, str]) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast", "--param", "rate=100"]
    args += ["--param", "rate=300", "--repeat", "2", "--json", *SHORT]
    done = run_harness(args, harness_env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # the whole of stdout is the document
    assert set(doc) == RUN_KEYS
    run_dir = runs_dir(harness_env) / doc["run_id"]
    assert json.loads((run_dir / "run.json").read_text()) == doc
    assert f"run directory: {run_dir}" in done.stderr
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{7}|\d{8}T\d{6}Z-nogit", doc["run_id"])
    assert doc["schema_version"] == 2 and doc["suite"] == "sleepy"
    assert doc["status"] == "complete" and doc["finished_at"]
    assert doc["config"]["params"] == {"rate": [100, 300]}
    assert doc["config"]["baseline"] == "slow"
    assert [m["name"] for m in doc["metrics"]] == ["ops_per_sec", "latency_ns.p99", "errors"]
    assert [(c["strategy"], c["params"]) for c in doc["cells"]] == [
        ("slow", {"rate": 100}),
        ("slow", {"rate": 300}),
        ("fast", {"rate": 100}),
        ("fast", {"rate": 300}),
    ]
    for cell in doc["cells"]:
        # The cell it is compared with; the baseline's own cell has none.
        assert set(cell) - {"baseline"} == CELL_KEYS
        assert cell.get("baseline") == (None if cell["strategy"] == "slow" else "slow")
        assert len(cell["repeats"]) == 2 and cell["failures"] == []
        assert cell["resolved_params"]["rate"] == cell["params"]["rate"]
        assert cell["resolved_params"]["mode"] == "plain"
        assert cell["summary"]["ops_per_sec"]["n"] == 2
        speed = 2 if cell["strategy"] == "fast" else 1
        for value in ops(cell):
            assert value == pytest.approx(cell["params"]["rate"] * speed, rel=0.2)
    ratios = [c for c in doc["comparisons"] if c["metric"] == "ops_per_sec"]
    assert [(c["candidate"], c["params"]["rate"]) for c in ratios] == [("fast", 100), ("fast", 300)]
    assert all(c["ratio"] == pytest.approx(2, rel=0.2) for c in ratios)
    # Interleaved: every cell once per round.
    order = [(e["strategy"], e["params"]["rate"]) for e in sleepy_log(harness_env)]
    round_ = [("slow", 100), ("slow", 300), ("fast", 100), ("fast", 300)]
    assert order == round_ * 2
    # One concise progress line per repeat when stderr is not a terminal.
    lines = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 8
    assert lines[0].startswith("[1/8] cell 1/4 repeat 1/2 slow rate=100: ")
    assert "ops/s" in lines[0] and "ETA" in lines[0]
    assert "scenario steady" in done.stderr  # the table goes to stderr with --json


def test_sequential_order_runs_all_repeats_of_a_cell_first(harness_env: dict[str, str]) -> None:
    args = ["run", "sleepy", "--strategies", "fast,slow", "--repeat", "2", "--order"]
    done = run_harness([*args, "sequential", *SHORT], harness_env)
    assert done.returncode == 0, done.stderr
    order = [e["strategy"] for e in sleepy_log(harness_env)]
    assert order == ["fast", "fast", "slow", "slow"]
    assert "scenario steady" in done.stdout  # without --json the table goes to stdout


def test_scenario_params_and_explicit_params_with_one_repeat(
    harness_env: dict[str, str],
) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast", "--scenario", "burst", "--repeat", "1"]
    done = run_harness([*args, "--param", "mode=fancy", "--json", *SHORT], harness_env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    slow, fast = doc["cells"]
    assert fast["params"] == slow["params"] and len(fast["repeats"]) == 1
    assert slow["scenario"] == "burst"
    assert slow["params"] == {"rate": 500, "mode": "fancy"}
    assert slow["resolved_params"]["rate"] == 500 and slow["resolved_params"]["mode"] == "fancy"
    assert ops(slow)[0] == pytest.approx(500, rel=0.2)
    # One repeat a side still gets a ratio, without an interval or significance.
    (ratio,) = [c for c in doc["comparisons"] if c["metric"] == "ops_per_sec"]
    assert ratio["ratio"] == pytest.approx(2, rel=0.2) and ratio["significant"] is False


def test_failed_repeats_are_recorded_and_the_run_goes_on(harness_env: dict[str, str]) -> None:
    args = ["run", "sleepy", "--strategies", "slow,crash,liar", "--repeat", "2", "--json"]
    done = run_harness([*args, *SHORT], harness_env)
    assert done.returncode == 1
    assert "4 of 6 repeats failed" in done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "partial"
    slow, crash, liar = doc["cells"]
    assert len(slow["repeats"]) == 2 and slow["failures"] == []
    assert crash["repeats"] == [] and [f["repeat"] for f in crash["failures"]] == [1, 2]
    for failure in crash["failures"]:
        assert failure["exit_code"] == 1
        assert "exited with code 1 (after 'ready')" in failure["error"]
        assert "sleepy: server crashed (simulated)" in failure["stderr_tail"]
    assert liar["repeats"] == []
    assert "protocol violation: event 'measure_end'" in liar["failures"][0]["error"]
    assert "FAILED: exited with code 1" in done.stderr


def test_a_run_where_every_repeat_fails_is_failed(harness_env: dict[str, str]) -> None:
    done = run_harness(
        ["run", "sleepy", "--strategies", "crash", "--repeat", "1", *SHORT], harness_env
    )
    assert done.returncode == 1
    assert only_run(harness_env)["status"] == "failed"


def test_a_hung_repeat_is_killed_at_its_deadline_with_its_children(
    harness_env: dict[str, str],
) -> None:
    env = {**harness_env, "HARNESS_DEADLINE_SLACK_S": "0.5"}
    done = run_harness(
        ["run", "sleepy", "--strategies", "hang,slow", "--repeat", "1", "--json", *SHORT], env
    )
    assert done.returncode == 1, done.stderr
    (failure,) = json.loads(done.stdout)["cells"][0]["failures"]
    assert failure["error"].startswith("timed out after 0.6 s (after 'ready')")
    # `hang` ignores SIGTERM: only the SIGKILL after the grace period ends it.
    assert failure["exit_code"] == -signal.SIGKILL
    for entry in sleepy_log(env):
        assert process_gone(entry["pid"]) and process_gone(entry["server_pid"]), entry


def test_run_json_is_replaced_atomically_while_running(harness_env: dict[str, str]) -> None:
    seen: list[str] = []
    # What went wrong in the watcher thread: an exception there would only be a warning.
    torn: list[BaseException] = []
    stop = threading.Event()

    def watch() -> None:
        try:
            while not stop.is_set():
                for path in runs_dir(harness_env).glob("*/run.json"):
                    try:
                        text = path.read_text()
                    except FileNotFoundError:
                        continue
                    doc = json.loads(text)  # raises on a half-written file
                    repeats = sum(len(c["repeats"]) for c in doc["cells"])
                    seen.append(f"{doc['status']}:{repeats}")
        except BaseException as err:
            torn.append(err)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        args = ["run", "sleepy", "--strategies", "slow,fast", "--repeat", "3"]
        done = run_harness([*args, "--duration-s", "0.05", "--warmup-s", "0"], harness_env)
    finally:
        stop.set()
        watcher.join()
    assert torn == [], f"the watcher read a torn run.json: {torn!r}"
    assert done.returncode == 0, done.stderr
    assert "running:0" in seen and any(s.startswith("running:") and s != "running:0" for s in seen)
    (run_dir,) = runs_dir(harness_env).iterdir()
    # No temp file left (charts/: the charts the reports open with).
    names = ["charts", "report.html", "run.json", "summary.md"]
    assert sorted(p.name for p in run_dir.iterdir()) == names
    assert not [p for p in (run_dir / "charts").iterdir() if p.suffix not in (".png", ".svg")]


def test_a_failed_write_leaves_the_previous_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.json"
    write_json_atomic(path, {"status": "running", "n": 1})

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("harness.base.writes.os.replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_json_atomic(path, {"status": "complete", "n": 2})
    assert json.loads(path.read_text()) == {"status": "running", "n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_non_finite_numbers_are_written_as_null(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    write_json_atomic(path, {"ci": [float("nan"), 1.5, float("inf")]})
    assert json.loads(path.read_text()) == {"ci": [None, 1.5, None]}


def test_run_ids_get_a_suffix_on_collision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    instant = time.gmtime(1_700_000_000)
    monkeypatch.setattr("harness.run.recorder.time.gmtime", lambda *_: instant)
    ids = [make_run_dir(tmp_path, "0123456789abcdef")[0] for _ in range(3)]
    assert ids == [
        "20231114T221320Z-0123456",
        "20231114T221320Z-0123456-2",
        "20231114T221320Z-0123456-3",
    ]
    assert make_run_dir(tmp_path / "other", None)[0] == "20231114T221320Z-nogit"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_run_and_keeps_what_completed(
    harness_env: dict[str, str], sig: signal.Signals
) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast", "--repeat", "5", "--json"]
    # In a process group of its own, as a shell job would be.
    proc = start_harness(
        [*args, "--duration-s", "1", "--warmup-s", "0"],
        harness_env,
        stdout=subprocess.PIPE,
        own_session=True,
    )
    assert proc.stderr is not None
    first = next_own_line(proc.stderr)  # the line of the first finished repeat
    assert first.startswith("[1/10] cell 1/2 repeat 1/5 slow: "), first
    # The second repeat's workload has started (it logs itself), and it runs for 1 s.
    deadline = time.monotonic() + 60
    while len(sleepy_log(harness_env)) < 2:
        assert time.monotonic() < deadline, "the second repeat did not start"
        time.sleep(0.01)
    os.killpg(proc.pid, sig)  # what Ctrl-C does to the terminal's foreground group
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["status"] == "interrupted" and doc["finished_at"]
    assert [len(c["repeats"]) for c in doc["cells"]] == [1, 0]
    assert doc["cells"][1]["failures"] == []  # the stopped repeat is not a failure
    assert "keeps the 1 completed repeats" in err
    assert "scenario steady" in err  # the table of what completed
    saved = json.loads((runs_dir(harness_env) / doc["run_id"] / "run.json").read_text())
    assert saved["status"] == "interrupted"
    entries = sleepy_log(harness_env)
    assert [e["strategy"] for e in entries] == ["slow", "fast"]
    for entry in entries:
        assert process_gone(entry["pid"]) and process_gone(entry["server_pid"]), entry
        with pytest.raises(ProcessLookupError):
            os.killpg(entry["pid"], 0)


def test_bench_quick_runs_the_scaled_matrix_of_each_suite(harness_env: dict[str, str]) -> None:
    done = run_harness(["bench", "--quick"], harness_env)
    assert done.returncode == 0, done.stderr
    run_dirs = list(runs_dir(harness_env).iterdir())
    assert len(run_dirs) == 1
    assert done.stdout.rstrip().endswith(f"run directories:\n  {run_dirs[0]}")
    doc = json.loads((run_dirs[0] / "run.json").read_text())
    cpus = os.cpu_count() or 1
    # [bench.params] rate = [64, 3200], scaled by cpus/32, never below 10; [quick]: 2 x 0.1 s.
    expected = list(dict.fromkeys(max(10, round(r * cpus / 32)) for r in (64, 3200)))
    assert doc["config"]["params"] == {"rate": expected}
    assert doc["config"]["scale"] == {
        "logical_cpus": cpus,
        "reference_threads": 32,
        "minimum": 10,
        "params": ["rate"],
    }
    assert doc["config"]["repeats"] == 2 and doc["config"]["duration_s"] == 0.1
    assert [c["strategy"] for c in doc["cells"]] == ["slow"] * len(expected) + ["fast"] * len(
        expected
    )
    assert doc["status"] == "complete"


def test_terminal_progress_shows_where_the_run_is() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=200, color_system=None)
    view = make_progress(console, total=4, planned_step_s=1.0)
    assert isinstance(view, RichProgress)
    step = Step(index=1, total=4, cell=1, cells=2, repeat=1, repeats=2, label="slow rate=100")
    with view:
        view.started(step)
        view.finished(step, Outcome(result={"ops_per_sec": 1234.4}, exit_code=0, elapsed_s=1))
    final = [line for line in buffer.getvalue().splitlines() if "cell" in line][-1]
    assert "cell 1/2 repeat 1/2 slow rate=100" in final
    assert "1/4" in final and "ETA 0:0" in final and "last: 1,234 ops/s" in final

    buffer.truncate(0)
    failed = Outcome(exit_code=1, reason="exited with code 1", stderr_tail=["[boom]", ""])
    with make_progress(console, total=4, planned_step_s=1.0) as view:
        view.finished(step, failed)
    text = buffer.getvalue()
    assert "cell 1/2 repeat 1/2 slow rate=100: FAILED: exited with code 1; stderr: [boom]" in text
    assert "last: FAILED" in text


def test_progress_without_a_terminal_is_one_line_per_repeat() -> None:
    buffer = io.StringIO()
    view = make_progress(Console(file=buffer, force_terminal=False), 2, 1.0)
    assert isinstance(view, LineProgress)
    step = Step(index=2, total=2, cell=1, cells=1, repeat=2, repeats=2, label="fast")
    with view:
        view.started(step)
        view.finished(step, Outcome(result={"ops_per_sec": 2e6}, exit_code=0, elapsed_s=1.25))
    assert buffer.getvalue() == (
        "[2/2] cell 1/1 repeat 2/2 fast: 2,000,000 ops/s (1.2 s, ETA 0:00)\n"
    )


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "workload.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_the_gate_is_opened_after_ready_and_other_lines_are_ignored(tmp_path: Path) -> None:
    binary = script(
        tmp_path,
        'echo "$@" >&2\necho "booting"\necho \'{"event":"ready","pids":[1]}\'\n'
        'read gate; echo "gate: $gate" >&2\necho \'{"event":"progress","done":1}\'\n'
        'echo \'{"no_event":1}\'\necho \'{"event":"measure_start"}\'\n'
        'echo \'{"event":"measure_end"}\'\necho \'{"event":"result","ops_per_sec":5}\'\n',
    )
    outcome = run_repeat(binary, tmp_path, ["--strategy", "s"], 30, StopFlag())
    assert outcome.ok and outcome.result == {"event": "result", "ops_per_sec": 5}
    assert outcome.stderr_tail == ["run --strategy s --gate", "gate: go"]


def test_exiting_without_a_result_fails(tmp_path: Path) -> None:
    binary = script(
        tmp_path,
        'echo \'{"event":"ready"}\'; read gate\n'
        'echo \'{"event":"measure_start"}\'; echo \'{"event":"measure_end"}\'\n',
    )
    outcome = run_repeat(binary, tmp_path, [], 30, StopFlag())
    assert not outcome.ok and outcome.exit_code == 0
    assert outcome.reason == "exited with code 0 without a result (after 'measure_end')"


def test_a_child_left_behind_is_killed_with_the_group(tmp_path: Path) -> None:
    binary = script(
        tmp_path,
        'sleep 300 >/dev/null 2>&1 &\necho "child $!" >&2\n'
        'echo \'{"event":"ready"}\'; read gate; echo \'{"event":"measure_start"}\'\n'
        'echo \'{"event":"measure_end"}\'; echo \'{"event":"result","ops_per_sec":1}\'\n',
    )
    outcome = run_repeat(binary, tmp_path, [], 30, StopFlag())
    assert outcome.ok
    child = int(outcome.stderr_tail[0].split()[1])
    assert process_gone(child)


def test_a_stop_request_ends_the_repeat_without_a_failure(tmp_path: Path) -> None:
    binary = script(tmp_path, 'echo \'{"event":"ready"}\'; sleep 300\n')
    stop = StopFlag()
    stop.signum = signal.SIGINT
    outcome = run_repeat(binary, tmp_path, [], 30, stop)
    assert outcome.interrupted and not outcome.ok and outcome.reason is None
    assert outcome.exit_code == -signal.SIGTERM


def test_a_binary_that_cannot_start_is_a_failed_repeat(tmp_path: Path) -> None:
    outcome = run_repeat(tmp_path / "missing", tmp_path, [], 30, StopFlag())
    assert outcome.reason == f"could not start {tmp_path / 'missing'}: No such file or directory"
