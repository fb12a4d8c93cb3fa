"""`harness bench` says what it will run and how long it should take before it starts, and
its ETA covers the suites still to come."""

from __future__ import annotations

import io

import pytest
from conftest import run_harness, runs_dir
from rich.console import Console

from harness.run.progress import Step, make_progress
from harness.run.repeat import Outcome

pytestmark = pytest.mark.unit


def test_bench_plan_prints_cells_repeats_and_the_estimate_and_runs_nothing(
    harness_env: dict[str, str],
) -> None:
    done = run_harness(["bench", "--plan"], harness_env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("bench plan (")
    # sleepy's [bench]: 2 strategies x 2 rates, 2 repeats of 0.05 + 0.2 s (+ 0.5 s start-up).
    assert "sleepy: 4 cells" in lines[1] and "x 2 repeats" in lines[1]
    assert lines[-1].strip() == "estimated duration: 0:06 (start-up 0.5 s a repeat)"
    assert not runs_dir(harness_env).exists() or not any(runs_dir(harness_env).iterdir())


def test_a_bench_prints_its_plan_before_it_starts(harness_env: dict[str, str]) -> None:
    done = run_harness(["bench", "--quick"], harness_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("bench plan (")


def test_the_eta_includes_the_suites_still_to_come() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=200)
    step = Step(index=1, total=1, cell=1, cells=1, repeat=1, repeats=1, label="x")
    with make_progress(console, total=1, planned_step_s=1.0, later_s=600) as view:
        view.started(step)
        view.finished(step, Outcome(result={"ops_per_sec": 1.0}, exit_code=0, elapsed_s=1))
    assert "ETA 10:00" in buffer.getvalue()
