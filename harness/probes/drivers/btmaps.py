"""bpftrace `-f json` output: split into the snapshots around the window, and their difference.

bpftrace prints one JSON object a line: `{"type": "map", "data": {"@name": value}}` where
value is a number or an object of numbers keyed by the map's keys; `"hist"` lines hold
`[{"min", "max", "count"}, ...]` (or an object of such lists for keyed histograms). All maps
are printed on SIGUSR1 and again on exit, so the window is the exit snapshot minus the
SIGUSR1 one. Only counts and sums difference meaningfully: a map filled by avg(), min() or
max() is diffed like any number, and `stats` lines are not diffed at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

MAP_TYPES = ("map", "hist", "stats")
Number = int | float


def _merge_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Keys printed through usym() name the function, not the address, so two call sites in
    one function print the same key twice: add their numbers up instead of keeping the last."""
    merged: dict[str, Any] = {}
    for key, value in pairs:
        known = merged.get(key)
        if _is_number(known) and _is_number(value):
            merged[key] = known + value
        else:
            merged[key] = value
    return merged


def parse_line(line: str) -> dict[str, Any] | None:
    """A JSON object with a `type`, else None (blank lines, partial output)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text, object_pairs_hook=_merge_duplicates)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and "type" in value else None


def is_map(event: Mapping[str, Any]) -> bool:
    return event.get("type") in MAP_TYPES and isinstance(event.get("data"), Mapping)


def maps_of(events: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """{"@name": {"type": ..., "value": ...}} of a snapshot; a later print of a map wins."""
    out: dict[str, dict[str, Any]] = {}
    for event in events:
        if is_map(event):
            for name, value in event["data"].items():
                out[name] = {"type": event["type"], "value": value}
    return out


def first_snapshot(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The first run of consecutive map lines (what one SIGUSR1 prints) and where it ends."""
    start = next((i for i, e in enumerate(events) if is_map(e)), len(events))
    end = start
    while end < len(events) and is_map(events[end]):
        end += 1
    return events[start:end], end


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_hist(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(b, Mapping) and "count" in b and "min" in b for b in value
    )


def _diff_numbers(end: Mapping[str, Any], start: Mapping[str, Any]) -> dict[str, Number] | None:
    if not all(_is_number(v) for v in end.values()):
        return None
    out = {}
    for key, value in end.items():
        before = start.get(key, 0)
        change = value - (before if _is_number(before) else 0)
        if change:
            out[key] = change
    return out


def _diff_hist(end: list[Mapping[str, Any]], start: Any) -> list[dict[str, Any]]:
    """Bucket by bucket, matched on their bounds."""
    before = {(b["min"], b.get("max")): b["count"] for b in start} if _is_hist(start) else {}
    return [{**b, "count": b["count"] - before.get((b["min"], b.get("max")), 0)} for b in end]


def diff_value(end: Any, start: Any) -> Any:
    """end - start for a number, an object of numbers, a histogram, or keyed histograms;
    None when the value is none of these."""
    if _is_number(end):
        return end - (start if _is_number(start) else 0)
    if _is_hist(end):
        return _diff_hist(end, start)
    if isinstance(end, Mapping):
        before = start if isinstance(start, Mapping) else {}
        numbers = _diff_numbers(end, before)
        if numbers is not None:
            return numbers
        if all(_is_hist(v) for v in end.values()):
            return {k: _diff_hist(v, before.get(k)) for k, v in end.items()}
    return None


def diff_snapshots(
    start: Mapping[str, Mapping[str, Any]], end: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """({"@name": window value}, names that could not be diffed)."""
    diff: dict[str, Any] = {}
    skipped: list[str] = []
    for name, entry in end.items():
        before = start.get(name, {}).get("value")
        value = None if entry["type"] == "stats" else diff_value(entry["value"], before)
        if value is None:
            skipped.append(name)
        else:
            diff[name] = value
    return diff, skipped
