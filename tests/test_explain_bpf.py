"""Measurement and explain repeats with real probes on the timers workload: the measurement
repeats carry sched counters only and record what its BPF programs cost, the explain repeats
carry sched in full and offwake, and the sched record and the off-wake graph come from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import only_run, run_harness, runs_dir
from test_bpf_collectors import ROOT, collectors  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.bpf, pytest.mark.e2e]


def test_measurement_repeats_record_their_bpf_share_and_explain_repeats_carry_offwake(
    collectors: Path,  # noqa: F811
    harness_env: dict[str, str],
) -> None:
    env = {**harness_env, "HARNESS_WORKLOADS": str(ROOT / "workloads")}
    args = ["run", "timers", "--strategies", "none", "--probes", "sched,offwake"]
    args += ["--param", "concurrency=64", "--duration-s", "0.5", "--warmup-s", "0.2"]
    done = run_harness([*args, "--repeat", "3", "--explain-repeats", "1"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    run = only_run(env)
    run_dir = runs_dir(env) / run["run_id"]
    assert run["config"]["measurement_probes"] == ["sched"]
    (cell,) = run["cells"]
    measured, explained = cell["repeats"], cell["probe_variants"]["all"]
    assert (len(measured), len(explained)) == (3, 1)
    # sched's programs ran in every measurement window: a share above 0, below the machine.
    for result in measured + explained:
        assert 0 < result["bpf_cpu_share"] < 1, result
        assert result["ctx_switches_per_op"] > 0
    # offwake ran on the explain repeat only (round 2 of 3), its file in the explain folder;
    # sched in full there, and the cell keeps that record (with the run-queue histograms).
    assert cell["probe_rounds"] == {"sched": [1, 2, 3], "all": [2]}
    (offwake,) = cell["probes"]["offwake"]["repeats"]
    assert offwake["repeat"] == 2 and offwake["path"].endswith("/explain/r2-offwake.json")
    assert offwake["totals"]["blocks"] > 0
    (sched,) = cell["probes"]["sched"]["repeats"]
    assert sched["repeat"] == 2 and sched["path"].endswith("/explain/r2-sched.json")
    assert (run_dir / sched["path"]).read_text().count('"mode":"full"') == 1
    assert sum(sched["totals"]["runq_hist_log2_ns"]) > 0
    assert "runq_latency_ns" in explained[0] and "runq_latency_ns" not in measured[0]
    # The measurement repeats' counters-only files are not kept: their per-op metrics are in
    # the repeats' results, and run.json points at none of them.
    explain_folder = (run_dir / offwake["path"]).parent
    assert sorted(p.name for p in explain_folder.parent.iterdir()) == ["explain"]
    assert sorted(p.name for p in explain_folder.iterdir()) == ["r2-offwake.json", "r2-sched.json"]
    # The explain repeat's share is its probes' bpf_stats of that window added up.
    shares = offwake["bpf_stats"]["cpu_share"] + sched["bpf_stats"]["cpu_share"]
    assert explained[0]["bpf_cpu_share"] == pytest.approx(shares)
    assert offwake["bpf_stats"]["cpu_share"] > 0 and sched["bpf_stats"]["cpu_share"] > 0
    # The off-wake graph is drawn from the explain repeat.
    profile = cell["profile"]
    assert (run_dir / profile["offwake_svg"]).is_file() and profile["offwake_ns"] > 0
    ratio = cell["explain_ratio"]
    assert (
        ratio["n"] == 1
        and ratio["ratio"] == explained[0]["ops_per_sec"] / (measured[1]["ops_per_sec"])
    )
    assert "figures: the measurement repeats (sched); with every probe (all)" in done.stdout
