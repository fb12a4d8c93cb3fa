"""A parameter's value as the workload contract types it (ParamValue) and writes it after
`--param k=`: describe's parameters, a plan's cells, run.json's params."""

from __future__ import annotations

ParamValue = int | float | bool | str


def render(value: ParamValue) -> str:
    """A typed value as written after `--param k=`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)
