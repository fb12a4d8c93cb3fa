"""--probe-overhead with the real collectors on the timers workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_harness
from requirements import need

from harness.paths import REPO_ROOT
from harness.probes.availability import btf_problem, collector_problem, privilege_problem
from harness.probes.spec import COLLECTORS

pytestmark = [pytest.mark.bpf, pytest.mark.e2e]


def test_each_cell_runs_without_probes_with_each_alone_and_with_all(
    harness_env: dict[str, str],
) -> None:
    need(privilege_problem() or btf_problem())
    for name in COLLECTORS:
        problem = collector_problem(name)
        if problem:
            pytest.fail(problem)
    env = {**harness_env, "HARNESS_WORKLOADS": str(REPO_ROOT / "workloads")}
    args = ["run", "timers", "--strategies", "none,deadline-tracker", "--probes", "sched,futex"]
    args += ["--probe-overhead", "--param", "concurrency=64", "--duration-s", "0.5"]
    done = run_harness([*args, "--warmup-s", "0.2", "--repeat", "1", "--json"], env)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["config"]["probe_overhead"] is True
    for cell in doc["cells"]:
        ratios = cell["probe_overhead"]
        assert set(ratios) == {"sched", "futex", "all"}
        # Ratios of two single repeats on a shared VM: only their sanity is certain.
        assert all(0.25 < ratio < 4 for ratio in ratios.values()), ratios
        variants = cell["probe_variants"]
        assert {key: len(results) for key, results in variants.items()} == {
            "none": 1,
            "sched": 1,
            "futex": 1,
        }
        assert ratios["sched"] == pytest.approx(
            variants["sched"][0]["ops_per_sec"] / variants["none"][0]["ops_per_sec"]
        )
        # The cell's own repeats are the ones with every probe, with per-op metrics.
        (result,) = cell["repeats"]
        assert ratios["all"] == pytest.approx(
            result["ops_per_sec"] / variants["none"][0]["ops_per_sec"]
        )
        assert result["ctx_switches_per_op"] > 0
        assert "ctx_switches_per_op" not in variants["none"][0]
    overall = doc["probe_overhead"]
    assert set(overall) == {"sched", "futex", "all"}
    none, tracker = (cell["probe_overhead"]["all"] for cell in doc["cells"])
    assert overall["all"] == pytest.approx((none * tracker) ** 0.5)
    # The table shows it, and progress lines say which probes ran.
    assert "probe overhead: median ops/s with the probes / without" in done.stderr
    assert "all cells (geometric mean)" in done.stderr
    assert "none concurrency=64 [probes: futex]" in done.stderr
    # Only the cell's own repeats keep raw probe files.
    run_dir = Path(harness_env["HARNESS_RESULTS"]) / "runs" / doc["run_id"]
    assert len(list(run_dir.glob("probes/**/*.json"))) == 4  # 2 cells x sched, futex
    assert not list(run_dir.glob("probes/**/overhead-*"))
