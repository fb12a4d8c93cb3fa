"""How a bisection and a two-revision run are told: progress lines, the end, the tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.format.numbers import DASH, human, human_p, human_ratio


def ratio_text(figures: Mapping[str, Any]) -> str:
    """`0.10x [0.09-0.11] p=0.031`, or a dash without a paired round."""
    ratio = figures.get("ratio")
    if ratio is None:
        return DASH
    text = human_ratio(float(ratio))
    low, high = figures.get("ci95_low"), figures.get("ci95_high")
    if low is not None and high is not None:
        text += f" [{human_ratio(float(low))}{DASH}{human_ratio(float(high))}]"
    p = figures.get("p_value")
    return text + (f" p={human_p(float(p))}" if p is not None else "")


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def value_text(value: float | None) -> str:
    return DASH if value is None else human(value)


def effect_of(figures: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "ratio": figures.get("ratio"),
        "low": figures.get("ci95_low"),
        "high": figures.get("ci95_high"),
        "p": figures.get("p_value"),
    }
