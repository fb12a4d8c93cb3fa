"""--probe-overhead with the real collectors on the timers workload: sched (counters only) is
the measurement set, futex explain-only, so `all`, the explain set (both in full), runs every
round."""

from __future__ import annotations

import json
import statistics
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
    done = run_harness([*args, "--warmup-s", "0.2", "--repeat", "3", "--json"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["config"]["probe_overhead"] is True
    for cell in doc["cells"]:
        ratios = cell["probe_overhead"]
        assert set(ratios) == {"sched", "futex", "all"}
        variants = cell["probe_variants"]
        assert {key: len(results) for key, results in variants.items()} == {
            "none": 3,
            "futex": 3,
            "all": 3,
        }
        # The cell's own repeats are the measurement ones (sched), with per-op metrics.
        assert len(cell["repeats"]) == 3
        runs = {**variants, "sched": cell["repeats"]}
        ops = {key: [r["ops_per_sec"] for r in results] for key, results in runs.items()}
        assert all(value > 0 for values in ops.values() for value in values), ops
        # Each ratio is the median of its variant's repeats over the median without probes
        # (not a mean, not one repeat: with three repeats the three differ).
        for key, ratio in ratios.items():
            expected = statistics.median(ops[key]) / statistics.median(ops["none"])
            assert ratio == pytest.approx(expected, rel=1e-12), (key, ops)
        assert cell["summary"]["ops_per_sec"]["median"] == statistics.median(ops["sched"])
        # Paired by round: every round ran every probe set, in order.
        keys = ("none", "futex", "all", "sched")
        assert cell["probe_rounds"] == {key: [1, 2, 3] for key in keys}
        for key, paired in cell["probe_overhead_paired"].items():
            per_round = [b / a for a, b in zip(ops["none"], ops[key], strict=True)]
            assert paired["n"] == 3
            assert paired["ratio"] == pytest.approx(statistics.median(per_round), rel=1e-12)
            assert (paired["ci95_low"], paired["ci95_high"]) == (min(per_round), max(per_round))
            assert not paired["significant"] and "6 rounds" in paired["reason"]
        # The probes' own cost over each window, from the BPF statistics.
        for name in ("sched", "futex"):
            cost = cell["probes"][name]["bpf_stats"]
            assert (
                cost["run_cnt"] > 0 and 0 < cost["run_time_ns"] <= cost["window_ns"] * cost["cpus"]
            )
            assert [r["bpf_stats"]["run_cnt"] > 0 for r in cell["probes"][name]["repeats"]] == [
                True
            ] * 3
        assert all(result["ctx_switches_per_op"] > 0 for result in cell["repeats"])
        # futex wait/op is the explain repeats' alone: futex never runs on the measurement ones.
        assert all("futex_wait_ns_per_op" not in result for result in cell["repeats"])
        assert all(result["futex_wait_ns_per_op"] > 0 for result in variants["all"])
        assert cell["explain_summary"]["futex_wait_ns_per_op"]["n"] == 3
        assert all("ctx_switches_per_op" not in result for result in variants["none"])
    overall = doc["probe_overhead"]
    assert set(overall) == {"sched", "futex", "all"}
    none, tracker = (cell["probe_overhead"]["all"] for cell in doc["cells"])
    assert overall["all"] == pytest.approx((none * tracker) ** 0.5)
    # The table shows it, and progress lines say which probes ran.
    assert "probe overhead: ops/s with the probes / without, paired by round" in done.stderr
    assert "all cells (rounds pooled)" in done.stderr
    assert "BPF CPU share" in done.stderr
    assert "BPF probes' own cost" in done.stderr
    assert set(doc["probe_overhead_paired"]) == {"sched", "futex", "all"}
    assert doc["probe_overhead_paired"]["all"]["n"] == 6
    assert "none concurrency=64 [probes: futex]" in done.stderr
    # Only the explain repeats keep raw probe files: sched's (in full) and futex's (with
    # stacks); the measurement repeats ran sched counters only.
    run_dir = Path(harness_env["HARNESS_RESULTS"]) / "runs" / doc["run_id"]
    assert len(list(run_dir.glob("probes/*/*/r*-sched.json"))) == 0
    assert len(list(run_dir.glob("probes/*/*/explain/r*-sched.json"))) == 6  # 2 cells x 3
    assert len(list(run_dir.glob("probes/*/*/explain/r*-futex.json"))) == 6
    assert len(list(run_dir.glob("probes/**/*.json"))) == 12
    assert not list(run_dir.glob("probes/**/overhead-*"))
