"""The timers suite's strategies, metrics and one repeat's result as `make bench SUITES=timers
QUICK=1` records them: the 18-cell run the table tests render at a terminal's width."""

from __future__ import annotations

from typing import Any

TIMERS_STRATEGIES = (
    "none",
    "tokio-timeout",
    "tokio-timeout-alt",
    "tokio-timeout-legacy",
    "deadline-tracker",
    "scheduled-executor",
    "event-executor",
    "hashed-wheel",
    "hashed-wheel-offload",
)


def lower_metrics(unit: str, *names: str) -> list[dict[str, str]]:
    """Metrics in `unit` of which less is better."""
    return [{"name": name, "unit": unit, "better": "lower"} for name in names]


# The suite's metrics in its order.
TIMERS_METRICS = [
    {"name": "ops_per_sec", "unit": "ops/s", "better": "higher"},
    *lower_metrics(
        "ns",
        "latency_ns.p50",
        "latency_ns.p99",
        "client_cpu_ns_per_op",
        "server_cpu_ns_per_op",
        "cpu_ns_per_op",
    ),
    *lower_metrics("requests", "timeouts", "errors"),
    *lower_metrics("switches", "ctx_switches_per_op"),
    *lower_metrics("wake-ups", "wakeups_per_op"),
    *lower_metrics("ns", "futex_wait_ns_per_op", "offcpu_ns_per_op"),
    *lower_metrics("share", "mutex_share"),
]


def timers_metrics(*names: str) -> list[dict[str, str]]:
    """The suite's metrics of these names, in this order."""
    by_name = {m["name"]: m for m in TIMERS_METRICS}
    return [by_name[name] for name in names]


def timers_result(strategy: str, k: float, f: float, probe_k: float = 1.0) -> dict[str, Any]:
    """One repeat's result line: `k` scales the workload's figures (ops up, times down),
    `probe_k` the probes' per-op ones, `f` is the repeat's spread around the median."""
    return {
        "event": "result",
        "ops_per_sec": 715_300 * k * f,
        "latency_ns": {"p50": 158_200 / k * f, "p99": 1_180_000 / k * f},
        "client_cpu_ns_per_op": 6_390 / k * f,
        "server_cpu_ns_per_op": 4_390 / k * f,
        "cpu_ns_per_op": 10_800 / k * f,
        "timeouts": 3 if "tokio" in strategy else 0,
        "errors": 0,
        "ctx_switches_per_op": 0.0137 / probe_k * f,
        "wakeups_per_op": 0.00904 / probe_k * f,
        "futex_wait_ns_per_op": 18_000 / probe_k * f,
        "offcpu_ns_per_op": 26_600 / probe_k * f,
        "mutex_share": 0.258 / probe_k * f,
    }
