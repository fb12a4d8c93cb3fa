"""Sentences on a run's gaps: its status, missing ratios or significance, probes that did not
run or lost events. Each names the cells it is about, once per reason.

A probe that does not apply to the workload's processes (gc without a GC runtime there) is
no gap: it is noted only when the user named it in --probes, not when `all` or the default
brought it in (run.json records it either way)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from harness.format.cells import param_text

# status -> (terminal style, what it means for the figures)
STATUS_NOTES = {
    "running": ("yellow", "the run has not finished (or stopped without updating run.json)"),
    "partial": ("yellow", "some repeats failed; figures use the successful repeats only"),
    "interrupted": ("yellow", "the run was stopped early; figures cover what finished"),
    "failed": ("bold red", "no cell produced a result"),
    "abandoned": ("bold red", "its harness died before the end; figures cover what finished"),
}


def notes(entries: Sequence[Mapping[str, Any]], strategy_key: str = "candidate") -> list[str]:
    """Why a ratio or its significance is missing, once per reason, naming the cells."""
    cells_by_reason: dict[str, dict[str, None]] = {}  # dicts as ordered sets
    for e in entries:
        if e.get("reason"):
            params = " ".join(f"{k}={param_text(v)}" for k, v in (e.get("params") or {}).items())
            label = " ".join(filter(None, [str(e.get(strategy_key)), params]))
            cells_by_reason.setdefault(str(e["reason"]), {})[label] = None
    found = []
    for reason, labels in cells_by_reason.items():
        which = ", ".join(labels) if len(labels) <= 3 else f"{len(labels)} cells"
        found.append(f"note ({which}): {reason}")
    return found


def named_probes(doc: Mapping[str, Any]) -> frozenset[str]:
    """The probes the run's user named in --probes (config.probes_named)."""
    return frozenset((doc.get("config") or {}).get("probes_named") or ())


def probe_problem(repeat: Mapping[str, Any], named: bool) -> tuple[str, str] | None:
    """(what, why) of a probe (or one repeat of it) without output; None when that is not
    worth a note."""
    if "unavailable" in repeat:
        return "unavailable", str(repeat["unavailable"])
    if "error" in repeat:
        return "failed", str(repeat["error"])
    if "not_applicable" in repeat and named:
        return "does not apply", str(repeat["not_applicable"])
    return None


def probe_notes(cells: Sequence[Mapping[str, Any]], named: Collection[str] = ()) -> list[str]:
    """Probes that did not run or lost events, once per probe and reason, naming the cells;
    those that do not apply to the processes only when `named`."""
    cells_by_note: dict[tuple[str, str], dict[str, None]] = {}
    for cell in cells:
        for name, probe in (cell.get("probes") or {}).items():
            problems = [
                problem
                for r in probe.get("repeats") or []
                if (problem := probe_problem(r, name in named)) is not None
            ]
            if probe.get("lost_events"):
                problems.append(("lost events", f"{probe['lost_events']} over the repeats"))
            for kind, reason in problems:
                key = (f"probe {name} {kind}", str(reason))
                cells_by_note.setdefault(key, {})[str(cell.get("id"))] = None
    lines = []
    for (what, reason), ids in cells_by_note.items():
        which = ", ".join(ids) if len(ids) <= 3 else f"{len(ids)} cells"
        lines.append(f"{what} ({which}): {reason}")
    return lines
