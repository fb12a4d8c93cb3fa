"""`harness bench` says what it will run and how long it should take before it starts, and
its ETA covers the suites still to come."""

from __future__ import annotations

import io
import json
from datetime import datetime
from pathlib import Path

import plans
import pytest
from conftest import FIXTURES, run_harness, runs_dir
from plans import printed_plan
from rich.console import Console

from harness.catalog import suite_at
from harness.describe import describe
from harness.probes.spec import parse_probes
from harness.run.estimate import steps
from harness.run.progress import Step, make_progress
from harness.run.repeat import Outcome

pytestmark = pytest.mark.unit


def test_bench_plan_prints_cells_repeats_and_the_estimate_and_runs_nothing(
    harness_env: dict[str, str],
) -> None:
    done = run_harness(["bench", "--plan"], harness_env)
    assert done.returncode == 0, done.stderr
    rows, estimate = printed_plan(done.stdout)
    # sleepy's [bench]: 2 strategies x 2 rates, 2 repeats of 0.05 + 0.2 s (+ 0.5 s start-up).
    (sleepy,) = rows.values()
    assert (sleepy.cells, sleepy.repeats, sleepy.explain_repeats) == (4, 2, 0), sleepy
    assert sleepy.startup == "0.5 s: no earlier run of it here to learn from"
    assert estimate == "0:06"
    assert max(map(len, done.stdout.splitlines())) <= 100
    assert not runs_dir(harness_env).exists() or not any(runs_dir(harness_env).iterdir())


def test_a_bench_prints_its_plan_before_it_starts_and_the_next_learns_its_start_up(
    harness_env: dict[str, str],
) -> None:
    done = run_harness(["bench", "--quick", "--probes", "none"], harness_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("bench plan (")
    (run_dir,) = runs_dir(harness_env).iterdir()
    run = json.loads((run_dir / "run.json").read_text())
    took = (_when(run["finished_at"]) - _when(run["started_at"])).total_seconds()
    config = run["config"]
    steps = len(run["cells"]) * config["repeats"]
    startup = took / steps - config["warmup_s"] - config["duration_s"]

    rows, _ = printed_plan(run_harness(["bench", "--plan"], harness_env).stdout)
    assert rows["sleepy"].startup == f"{max(startup, 0):.1f} s (run {run['run_id']})"

    # A run on a machine with other CPUs, or one that did not end well, teaches nothing.
    for key, value in (("host", {**run["host"], "logical_cpus": 999}), ("status", "failed")):
        (run_dir / "run.json").write_text(json.dumps({**run, key: value}))
        rows, _ = printed_plan(run_harness(["bench", "--plan"], harness_env).stdout)
        assert rows["sleepy"].startup.endswith("no earlier run of it here to learn from"), key


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_the_step_count_is_what_the_runner_runs(harness_env: dict[str, str]) -> None:
    suite = suite_at(FIXTURES / "sleepy")
    description = describe(suite)
    for probes in ("none", "sched", "futex", "offwake", "sched,futex,oncpu"):
        for measure in (False, True):
            for asked in (None, 1, 3):
                plan = plans.plan(
                    suite,
                    description,
                    strategies=["slow", "fast"],
                    repeats=3,
                    probes=parse_probes(probes),
                    probe_overhead=measure,
                    explain_repeats=asked,
                )
                runs = list(plan.runs())
                assert len(runs) == steps(plan), (probes, measure, asked)
                explained = [r for _, r, v in runs if v.explain]
                count = 0 if probes == "none" else 3 if measure else asked or 1
                assert len(explained) == 2 * count, (probes, measure, asked)


def test_the_plan_counts_the_explain_repeats(harness_env: dict[str, str]) -> None:
    """sleepy's [bench] with an explain-only probe: 4 cells x (2 + 1) repeats of 0.25 + 0.5 s."""
    done = run_harness(["bench", "--plan", "--probes", "sched,offwake"], harness_env)
    assert done.returncode == 0, done.stderr
    rows, estimate = printed_plan(done.stdout)
    assert (rows["sleepy"].repeats, rows["sleepy"].explain_repeats) == (2, 1)
    assert "  repeats n + m: m explain repeats, whose probes stay out of the figures" in (
        done.stdout.splitlines()
    )
    assert estimate == "0:09"


def test_the_eta_includes_the_suites_still_to_come() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=200)
    step = Step(index=1, total=1, cell=1, cells=1, repeat=1, repeats=1, label="x")
    with make_progress(console, total=1, planned_step_s=1.0, later_s=600) as view:
        view.started(step)
        view.finished(step, Outcome(result={"ops_per_sec": 1.0}, exit_code=0, elapsed_s=1))
    assert "ETA 10:00" in buffer.getvalue()


def test_a_bench_says_which_probes_this_machine_lacks_at_its_start_and_end(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    """A collector that is not built (as on a machine that cannot build or load BPF): one line
    before the plan and again before the run directories, and run.json records it."""
    env = {**harness_env, "HARNESS_BPF_BUILD": str(tmp_path / "no-collectors")}
    done = run_harness(["bench", "--quick", "--probes", "futex"], env)
    assert done.returncode == 0, done.stderr
    why = f"collector {tmp_path}/no-collectors/futex is not built (run `make -C bpf`)"
    line = f"harness: probes unavailable on this machine, their figures missing: futex: {why}"
    said = [text for text in done.stderr.splitlines() if text.startswith("harness: probes")]
    assert said == [line, line], done.stderr
    (run_dir,) = runs_dir(harness_env).iterdir()
    config = json.loads((run_dir / "run.json").read_text())["config"]
    assert config["probes_unavailable"] == {"futex": why}


def test_a_bench_whose_probes_all_run_records_none_missing(harness_env: dict[str, str]) -> None:
    done = run_harness(["bench", "--quick", "--probes", "none"], harness_env)
    assert done.returncode == 0, done.stderr
    assert "probes unavailable" not in done.stderr
    (run_dir,) = runs_dir(harness_env).iterdir()
    assert json.loads((run_dir / "run.json").read_text())["config"]["probes_unavailable"] == {}
