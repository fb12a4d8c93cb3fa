"""End to end: the harness runs the real scylla driver (`scylla-driver`,
`scylla-driver-no-timeout`) against the timers suite's CQL server, beside `none`."""

from __future__ import annotations

from typing import Any

import pytest
from test_timers_e2e import (  # noqa: F401 (the fixture)
    WIDENED_SLOW_TAIL,
    run_timers,
    short_run,
    timers_env,
)

pytestmark = pytest.mark.e2e

DRIVER = ("scylla-driver", "scylla-driver-no-timeout")


def assert_accounted(result: dict[str, Any]) -> None:
    """Every measured request resolved once and reached the server."""
    assert result["errors"] == 0 and result["unresolved"] == 0
    assert result["issued"] == result["ok"] + result["timeouts"] + result["errors"]
    assert result["server_requests"] == result["issued"]


def test_the_driver_strategies_run_beside_none_with_exact_accounting(
    timers_env: dict[str, str],  # noqa: F811 (the fixture)
) -> None:
    doc = run_timers(
        [
            "--strategies",
            ",".join(("none", *DRIVER)),
            *short_run(1),
        ],
        timers_env,
    )
    assert doc["status"] == "complete"
    assert [c["strategy"] for c in doc["cells"]] == ["none", *DRIVER]
    for cell in doc["cells"]:
        assert cell["failures"] == []
        (result,) = cell["repeats"]
        assert result["issued"] > 0 and result["ops_per_sec"] > 0
        assert_accounted(result)
        # The 5 s default timeout: nothing answered at once comes near it.
        assert result["timeouts"] == 0
        assert result["client_cpu_ns_per_op"] > 0 and result["server_cpu_ns_per_op"] > 0
    by_strategy = {c["strategy"]: c["repeats"][0] for c in doc["cells"]}
    # The driver's one tokio timer per request, and none without request_timeout.
    timed = by_strategy["scylla-driver"]
    assert timed["timer"]["registered"] == timed["issued"] == timed["timer"]["cancelled"]
    assert by_strategy["scylla-driver-no-timeout"]["timer"]["registered"] == 0
    # Kept inside the driver: not reported rather than reported as 0.
    for strategy in DRIVER:
        assert "late_responses" not in by_strategy[strategy]
        assert "handlers_left" not in by_strategy[strategy]
    # The driver against itself without its timeout (its twin), that one against none.
    assert [c.get("baseline") for c in doc["cells"]] == [None, "scylla-driver-no-timeout", "none"]
    ratios = [c for c in doc["comparisons"] if c["metric"] == "ops_per_sec"]
    assert [(c["baseline"], c["candidate"]) for c in ratios] == [
        ("scylla-driver-no-timeout", "scylla-driver"),
        ("none", "scylla-driver-no-timeout"),
    ]


def test_slow_tail_times_out_exactly_the_delayed_writes_with_the_driver(
    timers_env: dict[str, str],  # noqa: F811 (the fixture)
) -> None:
    doc = run_timers(
        [
            "--scenario",
            "slow-tail",
            "--strategies",
            ",".join(DRIVER),
            *WIDENED_SLOW_TAIL,  # as test_timers_e2e's hashed-wheel case
            # Without a timeout every slot that drew a delayed write is held 1.2 s: in a 1 s
            # window after 0.3 s of warm-up all 64 could be held throughout (no request, so
            # no slow one, arrived in the window once on a busy machine). 3 s frees each.
            *short_run(1, window_s=3),
        ],
        timers_env,
    )
    assert doc["status"] == "complete"
    timed, untimed = (c["repeats"][0] for c in doc["cells"])
    for cell in doc["cells"]:
        assert cell["failures"] == []
        assert_accounted(cell["repeats"][0])
    assert timed["server_slow"] > 0
    assert timed["timeouts"] == timed["server_slow"] == timed["timer"]["fired"]
    # Without request_timeout the driver waits for the delayed writes too.
    assert untimed["server_slow"] > 0 and untimed["timeouts"] == 0
    assert untimed["ok"] == untimed["issued"]
