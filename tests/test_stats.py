import math

import numpy as np
import pytest

from harness.stats import (
    bootstrap_ratio_interval,
    compare_cells,
    compare_samples,
    flatten_metrics,
    mann_whitney_p,
    median_interval,
    smallest_p,
    summarize_cell,
    verdict,
)

pytestmark = pytest.mark.unit

TIMERS_RESULT = {
    "event": "result",
    "strategy": "tokio-timeout",
    "scenario": "steady",
    "params": {"concurrency": 4096, "mode": "write"},
    "duration_s": 10.0,
    "issued": 123,
    "ok": 120,
    "timeouts": 3,
    "errors": 0,
    "ops_per_sec": 5.5e5,
    "latency_ns": {"p50": 400.0, "p99": 2000.0, "max": 9000},
    "timer": {"registered": 10, "cancelled": 7, "fired": 3, "rearms": 0},
    "gated": True,
    "note": "text is not a metric",
    "nan_metric": float("nan"),
}

OPS = {"name": "ops_per_sec", "unit": "ops/s", "better": "higher"}
P99 = {"name": "latency_ns.p99", "unit": "ns", "better": "lower"}


def test_flatten_metrics_joins_nested_keys_and_drops_identity_and_non_numbers() -> None:
    flat = flatten_metrics(TIMERS_RESULT)
    assert flat == {
        "duration_s": 10.0,
        "issued": 123.0,
        "ok": 120.0,
        "timeouts": 3.0,
        "errors": 0.0,
        "ops_per_sec": 5.5e5,
        "latency_ns.p50": 400.0,
        "latency_ns.p99": 2000.0,
        "latency_ns.max": 9000.0,
        "timer.registered": 10.0,
        "timer.cancelled": 7.0,
        "timer.fired": 3.0,
        "timer.rearms": 0.0,
    }


def test_median_interval_n5_is_min_max_with_its_real_coverage() -> None:
    low, high, coverage = median_interval([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (low, high) == (1.0, 5.0)
    assert coverage == pytest.approx(0.9375)


def test_median_interval_n6_is_min_max_and_reaches_95() -> None:
    low, high, coverage = median_interval([6.0, 1.0, 4.0, 2.0, 3.0, 5.0])
    assert (low, high) == (1.0, 6.0)
    assert coverage == pytest.approx(1 - 2 / 64)


def test_median_interval_n20_uses_ranks_6_and_15() -> None:
    values = [float(v) for v in np.random.default_rng(3).permutation(np.arange(1, 21))]
    low, high, coverage = median_interval(values)
    assert (low, high) == (6.0, 15.0)
    tail = sum(math.comb(20, i) for i in range(6)) / 2**20
    assert coverage == pytest.approx(1 - 2 * tail)
    assert coverage >= 0.95


def test_median_interval_single_value_has_no_coverage() -> None:
    assert median_interval([7.0]) == (7.0, 7.0, 0.0)


def test_median_interval_covers_the_true_median_as_often_as_it_claims() -> None:
    rng = np.random.default_rng(11)
    true_median = math.log(2)  # of Exp(1)
    trials = 4000
    hits = 0
    for _ in range(trials):
        low, high, coverage = median_interval(list(rng.exponential(size=20)))
        hits += low <= true_median <= high
    assert hits / trials == pytest.approx(coverage, abs=0.015)


def test_summarize_cell_counts_each_metric_over_the_repeats_that_report_it() -> None:
    repeats = [
        {"event": "result", "ops_per_sec": 10.0, "latency_ns": {"p99": 5.0}},
        {"event": "result", "ops_per_sec": 30.0},
        {"event": "result", "ops_per_sec": 20.0, "latency_ns": {"p99": 7.0}},
    ]
    summary = summarize_cell(repeats)
    assert summary["ops_per_sec"] == {
        "median": 20.0,
        "min": 10.0,
        "max": 30.0,
        "ci95_low": 10.0,
        "ci95_high": 30.0,
        "ci_coverage": pytest.approx(0.75),
        "n": 3,
    }
    assert summary["latency_ns.p99"]["n"] == 2
    assert summary["latency_ns.p99"]["median"] == 6.0
    assert summarize_cell([]) == {}


def test_bootstrap_interval_of_clearly_separated_samples_contains_the_ratio_and_not_1() -> None:
    rng = np.random.default_rng(5)
    baseline = list(100 + rng.normal(0, 2, size=10))
    candidate = list(200 + rng.normal(0, 4, size=10))
    interval = bootstrap_ratio_interval(baseline, candidate)
    assert interval is not None
    low, high = interval
    assert low < 2.0 < high
    assert low > 1.0
    assert high - low < 0.2
    assert bootstrap_ratio_interval(baseline, candidate) == interval  # seeded


def test_bootstrap_interval_is_none_when_a_resampled_baseline_median_is_zero() -> None:
    assert bootstrap_ratio_interval([0.0, 0.0, 5.0], [1.0, 2.0, 3.0]) is None


def test_mann_whitney_fully_separated_5_vs_5_is_significant() -> None:
    p = mann_whitney_p([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0])
    assert p == pytest.approx(2 / 252)
    assert round(p, 4) == 0.0079


def test_mann_whitney_identical_samples_are_not_significant() -> None:
    assert mann_whitney_p([3.0, 3.0, 3.0], [3.0, 3.0, 3.0]) == 1.0
    assert mann_whitney_p([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0]) == 1.0


def test_mann_whitney_single_values_and_ties_do_not_break() -> None:
    assert mann_whitney_p([3.0], [3.0]) == 1.0
    assert mann_whitney_p([1.0], [2.0]) == 1.0
    assert 0.0 < mann_whitney_p([1.0], [2.0, 2.0, 3.0]) <= 1.0


def test_mann_whitney_with_ties_is_exact() -> None:
    # Enumerating all 252 splits: 6 of them are at least as extreme as this one.
    p = mann_whitney_p([1.0, 2.0, 2.0, 3.0, 3.0], [3.0, 4.0, 4.0, 5.0, 6.0])
    assert p == pytest.approx(6 / 252)


def test_smallest_p_shows_that_three_repeats_a_side_cannot_reach_005() -> None:
    assert smallest_p(3, 3) == pytest.approx(0.1)
    assert smallest_p(4, 4) == pytest.approx(2 / 70)
    assert smallest_p(1, 1) == 1.0


def test_compare_samples_5_vs_5() -> None:
    result = compare_samples([100.0, 101, 99, 102, 98], [300.0, 303, 297, 306, 294], "higher")
    assert result["ratio"] == pytest.approx(3.0)
    assert result["ci95_low"] <= 3.0 <= result["ci95_high"]
    assert result["p_value"] == pytest.approx(2 / 252)
    assert result["significant"] is True
    assert result["verdict"] == "better"
    assert result["reason"] is None
    assert (result["n_baseline"], result["n_candidate"]) == (5, 5)


def test_compare_samples_3_vs_3_reports_p_but_is_never_significant() -> None:
    result = compare_samples([1.0, 2.0, 3.0], [100.0, 200.0, 300.0], "higher")
    assert result["p_value"] == pytest.approx(0.1)
    assert result["significant"] is False
    assert result["verdict"] == "inconclusive"
    assert "smallest possible p is 0.1" in result["reason"]


def test_compare_samples_zero_baseline_median_has_no_ratio_but_a_direction() -> None:
    result = compare_samples([0.0] * 5, [4.0, 5.0, 6.0, 7.0, 8.0], "lower")
    assert result["ratio"] is None
    assert result["ci95_low"] is None
    assert "baseline median is 0" in result["reason"]
    assert result["significant"] is True
    assert result["verdict"] == "worse"


def test_compare_samples_single_repeats_have_a_ratio_without_interval() -> None:
    result = compare_samples([100.0], [150.0], "higher")
    assert result["ratio"] == pytest.approx(1.5)
    assert result["ci95_low"] is None and result["ci95_high"] is None
    assert result["p_value"] == 1.0
    assert result["significant"] is False
    assert "single repeat" in result["reason"]


def test_compare_samples_without_values() -> None:
    result = compare_samples([], [1.0], "higher")
    assert result["ratio"] is None and result["p_value"] is None
    assert result["significant"] is False


@pytest.mark.parametrize(
    ("difference", "significant", "better", "conclusive", "expected"),
    [
        (1.0, True, "higher", True, "better"),
        (-1.0, True, "higher", True, "worse"),
        (1.0, True, "lower", True, "worse"),
        (-1.0, True, "lower", True, "better"),
        (1.0, True, None, True, "changed"),
        (1.0, False, "higher", True, "no change"),
        (1.0, False, "higher", False, "inconclusive"),
    ],
)
def test_verdict(
    difference: float, significant: bool, better: str | None, conclusive: bool, expected: str
) -> None:
    assert verdict(difference, significant, better, conclusive) == expected


def _cell(strategy: str, scenario: str, concurrency: int, ops: list[float]) -> dict[str, object]:
    return {
        "strategy": strategy,
        "scenario": scenario,
        "params": {"concurrency": concurrency},
        "repeats": [
            {"event": "result", "ops_per_sec": v, "latency_ns": {"p99": 1000.0 + i}}
            for i, v in enumerate(ops)
        ],
        "failures": [],
    }


def test_compare_cells_pairs_each_candidate_with_the_baseline_of_its_scenario_and_params() -> None:
    cells = [
        _cell("none", "steady", 64, [100, 101, 99, 102, 98]),
        _cell("none", "steady", 4096, [200, 202, 198, 204, 196]),
        _cell("none", "slow-tail", 64, [400, 404, 396, 408, 392]),
        _cell("tokio-timeout", "steady", 64, [50, 51, 49, 52, 48]),
        _cell("tokio-timeout", "steady", 4096, [50, 51, 49, 52, 48]),
        _cell("tokio-timeout", "slow-tail", 64, [50, 51, 49, 52, 48]),
    ]
    comparisons = compare_cells(cells, "none", [OPS])
    ratios = {
        (c["scenario"], c["params"]["concurrency"]): round(c["ratio"], 4) for c in comparisons
    }
    assert ratios == {("steady", 64): 0.5, ("steady", 4096): 0.25, ("slow-tail", 64): 0.125}
    for entry in comparisons:
        assert entry["baseline"] == "none"
        assert entry["candidate"] == "tokio-timeout"
        assert entry["metric"] == "ops_per_sec"
        assert entry["significant"] is True
        assert entry["verdict"] == "worse"


def test_compare_cells_keeps_what_it_cannot_compare_with_a_reason() -> None:
    failed = _cell("deadline-tracker", "steady", 64, [])
    failed["failures"] = [{"repeat": 0, "exit_code": 1, "error": "server died"}]
    cells = [
        _cell("none", "steady", 64, [100, 101, 99]),
        failed,
        _cell("tokio-timeout", "steady", 128, [50, 51, 49]),
        _cell("tokio-timeout", "steady", 64, [50, 51, 49]),
    ]
    comparisons = compare_cells(cells, "none", [OPS, P99, {"name": "wait_ns.p99"}])
    by_key = {(c["candidate"], c["params"]["concurrency"], c["metric"]): c for c in comparisons}
    assert len(comparisons) == 9
    assert "no successful repeats" in by_key[("deadline-tracker", 64, "ops_per_sec")]["reason"]
    assert "no 'none' cell" in by_key[("tokio-timeout", 128, "ops_per_sec")]["reason"]
    missing = by_key[("tokio-timeout", 64, "wait_ns.p99")]
    assert missing["ratio"] is None
    assert "do not report wait_ns.p99" in missing["reason"]
    p99 = by_key[("tokio-timeout", 64, "latency_ns.p99")]
    assert p99["ratio"] == pytest.approx(1.0)
    assert p99["better"] == "lower"
