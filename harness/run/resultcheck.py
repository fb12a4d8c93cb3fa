"""A result's metrics checked before the repeat counts: the declared ones are finite numbers
and not negative (rates, times, counts and shares all are), and no number anywhere in it is
NaN or infinite (Python's JSON reader lets `NaN` and `Infinity` through)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeGuard

from harness.run.repeat import Outcome

_MISSING = object()


def result_problem(result: Mapping[str, Any], declared: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the result cannot count as a successful repeat, else None."""
    for metric in declared:
        name = str(metric.get("name"))
        value = _lookup(result, name)
        if value is _MISSING:
            continue  # a metric a strategy does not report
        if not _is_number(value):
            return f"bad result: metric '{name}' is not a number: {_short(value)}"
        if not math.isfinite(value):
            return f"bad result: metric '{name}' is {value}"
        if value < 0:
            return f"bad result: metric '{name}' is negative: {value}"
    for path, value in _numbers(result, ""):
        if not math.isfinite(value):
            return f"bad result: '{path}' is {value}"
    return None


def _lookup(result: Mapping[str, Any], dotted: str) -> object:
    value: object = result
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(value: object, path: str) -> Iterator[tuple[str, float]]:
    if _is_number(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{path}[{index}]")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def vet(outcome: Outcome, declared: Sequence[Mapping[str, Any]]) -> None:
    """Turn a successful repeat whose result is bad into a failed one, with the reason."""
    if outcome.ok and outcome.result is not None:
        problem = result_problem(outcome.result, declared)
        if problem is not None:
            outcome.reason, outcome.result = problem, None
