"""A figure as one line of plain text, for the reports: a value in its unit, a median with its
interval, a ratio with its interval, a p-value. The terminal tables build theirs from the same
numbers.py pieces, spread over lines when the console is narrow (tables.figure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.format.metrics import SHARE_UNIT
from harness.format.numbers import (
    DASH,
    human,
    human_p,
    human_ratio,
    is_time_metric,
    join_range,
    percent,
)


def value_text(metric: str, value: float, unit: str | None = None) -> str:
    if unit == SHARE_UNIT:
        return percent(value)
    return human(value, is_time_metric(metric, unit))


def summary_texts(
    metric: str, summary: Mapping[str, Any] | None, unit: str | None = None
) -> tuple[str, str | None]:
    """(median, interval or None): the interval only when there was more than one repeat."""
    if not summary or summary.get("median") is None:
        return DASH, None
    median = value_text(metric, float(summary["median"]), unit)
    if int(summary.get("n", 0)) <= 1 or summary.get("ci95_low") is None:
        return median, None
    return median, interval_text(
        metric, float(summary["ci95_low"]), float(summary["ci95_high"]), unit
    )


def interval_text(metric: str, low: float, high: float, unit: str | None = None) -> str:
    """An interval, one suffix for both ends: 1.85-1.88M, 27.3-30.1% (with an en dash)."""
    if unit == SHARE_UNIT:
        return f"{percent(low).removesuffix('%')}{DASH}{percent(high)}"
    time_ns = is_time_metric(metric, unit)
    return join_range(human(low, time_ns), human(high, time_ns))


def ratio_texts(entry: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """("1.31x", "1.20-1.44") (with a multiplication sign and an en dash) from a comparisons
    entry; (DASH, None) without a ratio."""
    if entry is None or entry.get("ratio") is None:
        return DASH, None
    ratio = human_ratio(float(entry["ratio"]))
    if entry.get("ci95_low") is None or entry.get("ci95_high") is None:
        return ratio, None
    low = human_ratio(float(entry["ci95_low"]))[:-1]
    high = human_ratio(float(entry["ci95_high"]))[:-1]
    return ratio, f"{low}{DASH}{high}"


def p_text(entry: Mapping[str, Any] | None) -> str:
    if entry is None or entry.get("p_value") is None:
        return DASH
    return human_p(float(entry["p_value"]))
