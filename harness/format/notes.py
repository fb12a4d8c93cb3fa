"""Sentences on a run's gaps: its status, missing ratios or significance, probes that did not
run or lost events. Each names the cells it is about, once per reason.

A probe that does not apply to the workload's processes (gc without a GC runtime there) is
no gap: it is noted only when the user named it in --probes, not when `all` or the default
brought it in (run.json records it either way)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from harness.format.cells import param_text
from harness.format.names import printable
from harness.stability import SPREAD_LIMIT, stability_notes

# More notes of a kind than this, and the default table says them in one line (--wide and
# report.html give each).
NOTE_LINES = 3

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
            params = " ".join(
                f"{printable(k)}={param_text(v)}" for k, v in (e.get("params") or {}).items()
            )
            label = " ".join(filter(None, [printable(e.get(strategy_key)), params]))
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


def grouped(lines: Sequence[str], summary: str) -> list[str]:
    """The lines, or the one summary line when there are more than NOTE_LINES."""
    return list(lines) if len(lines) <= NOTE_LINES else [summary]


def _probe_problems(
    cells: Sequence[Mapping[str, Any]], named: Collection[str]
) -> dict[tuple[str, str], dict[str, None]]:
    """("probe NAME KIND", reason) -> the ids of the cells it happened in."""
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
    return cells_by_note


def probe_notes(cells: Sequence[Mapping[str, Any]], named: Collection[str] = ()) -> list[str]:
    """Probes that did not run or lost events, once per probe and reason, naming the cells;
    those that do not apply to the processes only when `named`."""
    lines = []
    for (what, reason), ids in _probe_problems(cells, named).items():
        which = ", ".join(ids) if len(ids) <= 3 else f"{len(ids)} cells"
        lines.append(f"{what} ({which}): {reason}")
    return lines


def probe_summary(cells: Sequence[Mapping[str, Any]], named: Collection[str] = ()) -> list[str]:
    """probe_notes, or when they are more than NOTE_LINES, one line naming each probe's
    problem and its number of cells, the reasons left to report.html."""
    problems = _probe_problems(cells, named)
    counts: dict[str, set[str]] = {}
    for (what, _), ids in problems.items():
        counts.setdefault(what.removeprefix("probe "), set()).update(ids)
    parts = [f"{what} ({len(ids)} of {len(cells)} cells)" for what, ids in counts.items()]
    summary = f"probes without full output: {', '.join(parts)}: the reasons in report.html"
    return grouped(probe_notes(cells, named), summary)


def stability_summary(cells: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> list[str]:
    """stability_notes, or when more than NOTE_LINES cells are unstable, one line: how many
    cells, with which warnings, and what to do."""
    lines = stability_notes(cells, labels)
    warned = [cell.get("stability") or {} for cell in cells if cell.get("stability")]
    if len(warned) <= NOTE_LINES:
        return lines
    kinds: dict[str, int] = {}  # spread, bimodal, drift -> cells
    for warnings in warned:
        found = {w.partition(":")[0] for ws in warnings.values() for w in ws}
        for kind in found:
            kinds[kind] = kinds.get(kind, 0) + 1
    names = {"spread": f"stdev > {SPREAD_LIMIT:.0%} of the mean"}
    which = ", ".join(f"{names.get(k, k)} in {n}" for k, n in sorted(kinds.items()))
    return [
        f"unstable: {len(warned)} of {len(cells)} cells ({which}): see report.html; "
        "`harness doctor` shows what to quiet"
    ]
