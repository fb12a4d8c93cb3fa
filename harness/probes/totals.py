"""Adding up probe outputs: a cell's totals over its repeats, the gc probe's over runtimes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def add(total: Any, value: Any) -> Any:
    """Numbers add, lists add element-wise (histograms), objects add key by key."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return (total if isinstance(total, int | float) else 0) + value
    if isinstance(value, list):
        items = list(total) if isinstance(total, list) else []
        items += [0] * (len(value) - len(items))
        return [add(b, v) for b, v in zip(items, value, strict=False)] + items[len(value) :]
    if isinstance(value, Mapping):
        fields = dict(total) if isinstance(total, Mapping) else {}
        for key, inner in value.items():
            fields[key] = add(fields.get(key), inner)
        return fields
    return value
