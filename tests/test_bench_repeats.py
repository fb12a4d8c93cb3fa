"""The nightly's repeats by noise: a suite whose series cannot show a 3% change the night it
lands gets more repeats, a quiet one fewer, and the plan still fits the bench's share of the
hour, saying what each suite got and why. The figures are power.py's simulation of the
detector for the noise given (not stand-ins)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import FIXTURES, run_harness, runs_dir
from plans import plan, printed_plan
from rundocs import cell, config, run

from harness.catalog import suite_at
from harness.describe import describe
from harness.history.power import Noise, min_detectable
from harness.hostinfo import collect_host
from harness.run.estimate import planned_s
from harness.run.noise_repeats import (
    GOAL,
    MAX_REPEATS,
    QUIET_REPEATS,
    Figure,
    allot_repeats,
)
from harness.run.plan import Plan

pytestmark = pytest.mark.unit

# Measured figures of this repo's nights (issue 34): the token bucket's rate moved 0.3%, a
# timers cell's repeats spread 10%.
QUIET = Noise(within=0.003, between=0.001)
NOISY = Noise(within=0.01, between=0.0)  # within-run noise: more repeats bring it down
BETWEEN = Noise(within=0.01, between=0.02)  # the nights differ: more repeats do not help


def _plans() -> list[Plan]:
    suite = suite_at(FIXTURES / "sleepy")
    base = plan(suite, describe(suite), strategies=["slow", "fast"], repeats=5, duration_s=10.0)
    return [replace(base, suite=replace(suite, name=name)) for name in ("quiet", "noisy", "new")]


def _figure(noise: Noise) -> Figure:
    return lambda repeats, nights: min_detectable(noise, repeats, nights)


def test_a_noisy_suite_gets_more_repeats_a_quiet_one_fewer_a_new_one_its_own() -> None:
    plans = _plans()
    figures = {"quiet": _figure(QUIET), "noisy": _figure(NOISY)}
    out, allotted, over = allot_repeats(plans, figures, budget_s=3600)
    got = {p.suite.name: p.repeats for p in out}
    assert got["quiet"] == QUIET_REPEATS < 5 < got["noisy"] <= MAX_REPEATS, got
    assert got["new"] == 5 and over == 0
    # The noisy suite gets the fewest repeats that bring it to the goal.
    at = min_detectable(NOISY, got["noisy"], 1)
    before = min_detectable(NOISY, got["noisy"] - 1, 1)
    assert at is not None and at <= GOAL and (before is None or before > GOAL), (at, before)
    why = {a.suite: a.why for a in allotted}
    assert why["quiet"].startswith("quiet: ") and "within three nights" in why["quiet"], why
    assert why["noisy"].startswith("noisy: ") and f"at {got['noisy']}" in why["noisy"], why
    assert why["new"] == "no history of it on this machine: its [bench] repeats"


def test_noise_between_nights_gets_no_repeats_that_would_not_help() -> None:
    plans = _plans()[1:2]
    out, allotted, _ = allot_repeats(plans, {"noisy": _figure(BETWEEN)}, budget_s=3600)
    assert out[0].repeats == 5
    assert "its noise is between nights" in allotted[0].why, allotted


def test_the_extra_repeats_are_taken_back_until_the_plan_fits() -> None:
    plans = _plans()
    figures = {"quiet": _figure(QUIET), "noisy": _figure(NOISY)}
    full, _, _ = allot_repeats(plans, figures, budget_s=3600)
    budget = sum(planned_s(p) for p in full) - 2 * planned_s(replace(full[1], repeats=1))
    out, allotted, over = allot_repeats(plans, figures, budget_s=budget)
    assert sum(planned_s(p) for p in out) <= budget and over == 0
    noisy = {a.suite: a for a in allotted}["noisy"]
    assert noisy.repeats == full[1].repeats - 2 and "to fit the bench's" in noisy.why, noisy
    # Nothing left to take back: the plan says by how much it is over.
    _, _, over = allot_repeats(plans, figures, budget_s=60)
    assert over > 0


def test_a_plan_over_its_share_gives_back_the_repeats_that_buy_nothing() -> None:
    """No extra repeats left to take back: the suite whose noise is between nights goes down
    to QUIET_REPEATS (more repeats a night do not lower its figure) before the plan is over;
    a suite of within-run noise keeps its repeats."""
    plans = _plans()[1:]  # "noisy" (given BETWEEN here) and "new"
    figures = {"noisy": _figure(BETWEEN)}
    budget = sum(planned_s(p) for p in plans) - planned_s(replace(plans[0], repeats=1))
    out, allotted, over = allot_repeats(plans, figures, budget_s=budget)
    got = {a.suite: a for a in allotted}
    assert over == 0 and sum(planned_s(p) for p in out) <= budget
    assert got["noisy"].repeats == 4 and "to fit the bench's" in got["noisy"].why, got
    assert got["new"].repeats == 5
    # Never below QUIET_REPEATS: past that the plan says it is over.
    _, allotted, over = allot_repeats(plans, figures, budget_s=60)
    assert over > 0 and {a.suite: a.repeats for a in allotted}["noisy"] == QUIET_REPEATS


def test_bench_plan_gives_a_noisy_suite_more_repeats_and_says_why(
    harness_env: dict[str, str],
) -> None:
    """Ten nights of sleepy on this machine whose ops/s repeats spread 1% within a run (and
    not between nights): more repeats than its [bench] 2, said in the plan; --fixed-repeats
    keeps them; the plan fits the hour with the confirming runs' share."""
    rng = np.random.default_rng(3)
    for night in range(10):
        repeats = [{"ops_per_sec": 1000 * (1 + 0.01 * rng.standard_normal())} for _ in range(5)]
        run_id = f"202501{night + 1:02d}T000000Z-abc1234"
        doc = run(
            [cell("slow", "steady", {"rate": 10}, repeats)],
            run_id=run_id,
            suite="sleepy",
            started_at=f"2025-01-{night + 1:02d}T00:00:00Z",
            finished_at=f"2025-01-{night + 1:02d}T00:00:10Z",
            host=collect_host(),
            config=config(strategies=["slow"], baseline="slow"),
        )
        folder = runs_dir(harness_env) / run_id
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(doc))
    done = run_harness(["history", "import"], harness_env)
    assert done.returncode == 0, done.stderr
    for folder in list(runs_dir(harness_env).iterdir()):  # the start-up is not theirs to teach
        (folder / "run.json").unlink()
        folder.rmdir()

    done = run_harness(["bench", "--plan"], harness_env)
    assert done.returncode == 0, done.stderr
    rows, _ = printed_plan(done.stdout)
    assert rows["sleepy"].repeats > 2, done.stdout
    lines = done.stdout.splitlines()
    assert "  repeats by noise (goal: a 3% change seen the night it lands):" in lines
    (why,) = [line for line in lines if line.startswith("    sleepy  ")]
    assert f"  {rows['sleepy'].repeats}  noisy: " in why, done.stdout
    assert "  then confirming runs (harness history confirm): up to 6:00, 10% of the hour" in (
        lines
    )
    assert max(map(len, lines)) <= 100

    fixed = run_harness(["bench", "--plan", "--fixed-repeats"], harness_env)
    rows, _ = printed_plan(fixed.stdout)
    assert rows["sleepy"].repeats == 2 and "repeats by noise" not in fixed.stdout
