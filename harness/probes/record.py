"""What a repeat's probes add to its cell in run.json (`cells[].probes`).

Per probe: `repeats`, one entry per repeat (a summary of its output and the path of the raw
file, or `unavailable`/`error`), and over the cell's repeats: `paths`, `lost_events` and
`totals` (collectors: their totals added up). A probe that produced nothing in any repeat
also gets `unavailable` (or `error`) at the top: nothing goes silently missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.probes.metrics import numbers_per_op
from harness.probes.probe import ProbeResult

# The raw file has everything bpftrace printed, both snapshots included.
BT_KEYS = ("script", "diff", "not_diffed", "output", "notes")


def cell_folder(run_dir: Path, cell_id: str) -> Path:
    """`<run>/probes/<cell id>`: the id's `/`-separated parts become nested folders."""
    parts = [part if part not in ("", ".", "..") else f"_{part}_" for part in cell_id.split("/")]
    return run_dir.joinpath("probes", *parts)


def repeat_entry(
    repeat: int, result: ProbeResult, run_dir: Path, ops: float | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"repeat": repeat}
    if result.unavailable:
        entry["unavailable"] = result.unavailable
        return entry
    if result.error or result.data is None or result.path is None:
        entry["error"] = result.error or "no output"
        return entry
    data = result.data
    entry["path"] = str(result.path.relative_to(run_dir))
    if "script" in data:  # bpftrace
        entry |= {key: data[key] for key in BT_KEYS if key in data}
        if ops is not None:
            entry["per_op"] = numbers_per_op(data.get("diff") or {}, ops)
    else:
        for key in ("window_ns", "lost_events", "totals"):
            if key in data:
                entry[key] = data[key]
    return entry


def _add(total: Any, value: Any) -> Any:
    """Numbers add, lists add element-wise (histograms), objects add key by key."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return (total if isinstance(total, int | float) else 0) + value
    if isinstance(value, list):
        items = list(total) if isinstance(total, list) else []
        items += [0] * (len(value) - len(items))
        return [_add(b, v) for b, v in zip(items, value, strict=False)] + items[len(value) :]
    if isinstance(value, Mapping):
        fields = dict(total) if isinstance(total, Mapping) else {}
        for key, inner in value.items():
            fields[key] = _add(fields.get(key), inner)
        return fields
    return value


def summarize(repeats: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"repeats": repeats}
    done = [r for r in repeats if "path" in r]
    if not done:
        last = repeats[-1] if repeats else {}
        key = "unavailable" if "unavailable" in last else "error"
        summary[key] = last.get(key, "no repeat ran")
        return summary
    summary["paths"] = [r["path"] for r in done]
    if any("lost_events" in r for r in done):
        summary["lost_events"] = sum(r.get("lost_events", 0) for r in done)
    totals = None
    for r in done:
        if "totals" in r:
            totals = _add(totals, r["totals"])
    if totals is not None:
        summary["totals"] = totals
    return summary


def add_repeat(
    cell_probes: dict[str, Any],
    repeat: int,
    results: Mapping[str, ProbeResult],
    run_dir: Path,
    ops: float | None,
) -> None:
    """Record one repeat's probe results in the cell's `probes` object, in place."""
    for name, result in results.items():
        repeats = list((cell_probes.get(name) or {}).get("repeats") or [])
        repeats.append(repeat_entry(repeat, result, run_dir, ops))
        cell_probes[name] = summarize(repeats)
