"""Per-op metrics of one repeat, from the probes' output over its measured window: each
kind derives its own (harness/probes/kinds/, docs/probes.md).

The op count is the result's `ok` (requests answered in time) if present, else `issued`,
else `ops`; without one, no per-op metric is derived. Only the measured client counts: the
first pid of the ready event.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.probes import registry
from harness.probes.kind import RepeatContext
from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS

OP_COUNT_KEYS = ("ok", "issued", "ops")


def op_count(result: Mapping[str, Any]) -> float | None:
    for key in OP_COUNT_KEYS:
        value = result.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if value > 0 else None
    return None


def per_op_metrics(
    result: Mapping[str, Any],
    outputs: Mapping[str, Mapping[str, Any]],
    client: int,
    folder: Path | None = None,
    mutex_patterns: tuple[str, ...] = DEFAULT_MUTEX_PATTERNS,
) -> dict[str, Any]:
    """Every kind's metrics of the outputs present, in the registry's order."""
    context = RepeatContext(client, op_count(result), folder, mutex_patterns)
    metrics: dict[str, Any] = {}
    for kind in registry.NAMED:
        if kind.name in outputs:
            metrics |= kind.derive(outputs[kind.name], context)
    return metrics
