"""End to end: the harness drives the real timers binary (built by `make deps`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_harness

from harness.paths import REPO_ROOT
from harness.suites import discover

pytestmark = pytest.mark.e2e

WORKLOADS = REPO_ROOT / "workloads"


@pytest.fixture
def timers_env(harness_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    suite = discover(WORKLOADS)["timers"]
    if not suite.built:
        pytest.fail(f"the timers binary {suite.binary} is not built: run `make deps`")
    return {**harness_env, "HARNESS_WORKLOADS": str(WORKLOADS)}


def short_run(repeats: int, window_s: int = 1) -> list[str]:
    """64 requests in flight, 1 s windows (`window_s`) after a 0.3 s warm-up: the tests' short
    repeats."""
    return [
        "--param",
        "concurrency=64",
        "--duration-s",
        str(window_s),
        "--warmup-s",
        "0.3",
        "--repeat",
        str(repeats),
    ]


# The slow-tail scenario's 100 ms timeout against 300 ms answers, widened as the in-process
# tests do (workloads/timers/tests/common): a normal answer has 300 ms to beat the timeout, a
# slow one comes 900 ms after it, so on a loaded machine exactly the slow requests still time
# out.
WIDENED_SLOW_TAIL = ["--param", "timeout_ms=300", "--param", "slow_delay_ms=1200"]


def run_timers(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = run_harness(["run", "timers", *args, "--json"], env, timeout=180)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def test_three_strategies_complete_and_every_request_is_accounted_for(
    timers_env: dict[str, str],
) -> None:
    doc = run_timers(
        [
            "--strategies",
            "none,tokio-timeout,deadline-tracker",
            *short_run(2),
        ],
        timers_env,
    )
    assert doc["status"] == "complete"
    assert [c["strategy"] for c in doc["cells"]] == ["none", "tokio-timeout", "deadline-tracker"]
    for cell in doc["cells"]:
        assert cell["params"]["concurrency"] == 64
        assert cell["resolved_params"]["concurrency"] == 64
        assert len(cell["repeats"]) == 2 and cell["failures"] == []
        for result in cell["repeats"]:
            assert result["issued"] > 0 and result["ops_per_sec"] > 0
            # The client's accounting against the server's own count of the window's
            # requests: every request issued reached the server and resolved once.
            assert result["errors"] == 0
            assert result["server_requests"] == result["issued"]
            assert result["issued"] == result["ok"] + result["timeouts"]
        assert cell["summary"]["ops_per_sec"]["n"] == 2
    ratios = [c for c in doc["comparisons"] if c["metric"] == "ops_per_sec"]
    assert [(c["baseline"], c["candidate"]) for c in ratios] == [
        ("none", "tokio-timeout"),
        ("none", "deadline-tracker"),
    ]
    assert all(c["ratio"] > 0 for c in ratios)


def test_slow_tail_requests_time_out_on_the_hashed_wheel(timers_env: dict[str, str]) -> None:
    doc = run_timers(
        [
            "--scenario",
            "slow-tail",
            "--strategies",
            "hashed-wheel",
            "--param",
            "tick_ms=10",
            *WIDENED_SLOW_TAIL,
            *short_run(2),
        ],
        timers_env,
    )
    assert doc["status"] == "complete"
    (cell,) = doc["cells"]
    assert cell["scenario"] == "slow-tail" and cell["params"]["tick_ms"] == 10
    assert cell["params"]["timeout_ms"] == 300 and cell["params"]["slow_delay_ms"] == 1200
    assert len(cell["repeats"]) == 2 and cell["failures"] == []
    for result in cell["repeats"]:
        assert result["server_slow"] > 0
        assert result["timeouts"] == result["server_slow"]
        assert result["server_requests"] == result["issued"]
        assert result["issued"] == result["ok"] + result["timeouts"] + result["errors"]
