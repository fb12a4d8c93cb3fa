"""--probe-overhead ratios paired by round (harness/probes/overhead_pairs.py)."""

from __future__ import annotations

import pytest

from harness.probes.overhead_pairs import cell_intervals, paired_ratios, run_intervals

pytestmark = pytest.mark.unit

# Rounds that drift (two slow, the rest fast) the same way for every probe set.
NONE_OPS = [537e3, 914e3, 560e3, 880e3, 900e3, 870e3]


def ops(values: list[float]) -> list[dict[str, float]]:
    return [{"ops_per_sec": v} for v in values]


def test_a_constant_cost_under_drifting_rounds_is_found_and_significant_from_6_rounds() -> None:
    probes = [v * 0.9 for v in NONE_OPS]
    figures = cell_intervals({"none": ops(NONE_OPS), "sched": ops(probes)}, None)["sched"]
    assert figures["ratio"] == pytest.approx(0.9)
    assert figures["ci95_low"] == pytest.approx(0.9) == figures["ci95_high"]
    assert figures["n"] == 6 and figures["significant"] and figures["reason"] is None
    assert figures["p_value"] < 0.05

    five = cell_intervals({"none": ops(NONE_OPS[:5]), "sched": ops(probes[:5])}, None)["sched"]
    assert not five["significant"]
    assert "6 rounds" in five["reason"]


def test_rounds_pair_the_repeats_that_ran_in_the_same_round() -> None:
    # Round 2 failed without probes, round 3 with them: rounds 1 and 4 pair.
    variants = {"none": ops([100.0, 300.0, 400.0]), "all": ops([90.0, 150.0, 360.0])}
    rounds = {"none": [1, 3, 4], "all": [1, 2, 4]}
    assert paired_ratios(variants, rounds) == {"all": pytest.approx([0.9, 0.9])}
    # Without rounds, unequal counts cannot pair.
    assert paired_ratios(variants | {"none": ops([100.0, 300.0])}, None) == {"all": []}
    assert cell_intervals({"none": [], "all": ops([1.0])}, None)["all"]["ratio"] is None


def test_the_run_pools_every_cells_rounds() -> None:
    pooled = run_intervals([{"all": [0.9, 0.8]}, {"all": [0.85, 0.95], "sched": [1.0]}])
    assert pooled["all"]["n"] == 4
    assert pooled["all"]["ratio"] == pytest.approx(0.875)
    assert pooled["sched"]["reason"] == "one round only"
