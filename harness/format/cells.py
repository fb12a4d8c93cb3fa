"""A run's cells as shown: their summaries, the params that tell them apart, param values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from harness.format.names import printable
from harness.format.numbers import DASH
from harness.rundoc.model import Cell
from harness.stats import params_key, summarize_cell


def cell_summary(cell: Mapping[str, Any]) -> Mapping[str, Any]:
    return cell.get("summary") or summarize_cell(cell.get("repeats") or [])


def varying_params(cells: Sequence[Mapping[str, Any]]) -> list[str]:
    """Param names whose value is not the same in every cell (the ones worth a column)."""
    names = dict.fromkeys(name for cell in cells for name in cell.get("params") or {})
    return [
        name
        for name in names
        if len({params_key({"v": (cell.get("params") or {}).get(name)}) for cell in cells}) > 1
    ]


CellT = TypeVar("CellT", Cell, Mapping[str, Any])


def by_scenario(cells: Sequence[CellT]) -> dict[str, list[CellT]]:
    """The cells by their scenario's name, in their order."""
    groups: dict[str, list[CellT]] = {}
    for cell in cells:
        scenario = cell.scenario if isinstance(cell, Cell) else cell.get("scenario")
        groups.setdefault(str(scenario), []).append(cell)
    return groups


def param_text(value: Any) -> str:
    """A param's value as shown; a string's control characters escaped."""
    if isinstance(value, bool):
        return str(value).lower()
    return DASH if value is None else printable(value)
