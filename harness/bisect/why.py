"""Why the first bad build is worse than the last good one, from a run of each with the
profiles: CPU per op (the sched probe's, measurement repeats) with its 95% interval, the
frames whose self share of the client's on-CPU samples grew most, the scheduling and wait
figures (off-CPU, wake-ups, context switches, run-queue and futex wait per op, waits.py) and
the differential flame graph between the two, in the words of a run's findings
(harness/report/mechanism.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bisect import waits
from harness.format.numbers import human, percent
from harness.probes.gather import gather
from harness.probes.kinds import futex, offwake, oncpu, sched
from harness.profiles import folded, inferno
from harness.profiles.run_diff import diff_runs
from harness.report.mechanism import CPU_METRICS, GROWTH_FRAMES, ratio_clause
from harness.rundoc.model import RunDoc
from harness.stats import compare_samples, metric_values

# The explanation runs' probes: CPU per op and the scheduling figures, the on-CPU profile,
# the futex waits and the off-wake (blocked -- waker) stacks.
PROBES = ",".join(kind.NAME for kind in (sched, oncpu, futex, offwake))


@dataclass(frozen=True)
class Why:
    finding: str | None
    diff_flamegraph: Path | None
    notes: list[str]  # why a part is missing
    # Each run's own graphs ("last_good", "first_bad" -> "oncpu", "offwake", ... -> path)
    graphs: dict[str, dict[str, str]] = field(default_factory=dict)


def explain(good: RunDoc, good_dir: Path, bad: RunDoc, bad_dir: Path) -> Why:
    """The finding, the differential graph and the runs' graphs of the two runs' one cell."""
    notes: list[str] = []
    good_doc = _doc(good_dir)
    bad_doc = _doc(bad_dir)
    if not good.cells or not bad.cells or good_doc is None or bad_doc is None:
        return Why(None, None, ["a run of the explanation has no cell"])
    parts = []
    cpu = _cpu(good_doc["cells"][0], bad_doc["cells"][0])
    if cpu is not None:
        parts.append(cpu)
    else:
        notes.append("no CPU per op in both runs (the sched probe did not run)")
    grown = folded.grew_most(
        gather(good_dir, good.cells[0]).client, gather(bad_dir, bad.cells[0]).client, GROWTH_FRAMES
    )
    if grown:
        frames = ", ".join(
            f"{g['frame']} {percent(float(str(g['baseline_share'])))} → "
            f"{percent(float(str(g['share'])))}"
            for g in grown
        )
        parts.append(f"top growth (self share of the client's on-CPU samples): {frames}")
    else:
        notes.append("no frame's share grew in the on-CPU profiles (or none was recorded)")
    good_side, bad_side = waits.Side(good, good_dir), waits.Side(bad, bad_dir)
    figures, absent = waits.clauses(good_side, bad_side)
    parts += figures
    if absent:
        notes.append(f"not in both runs: {', '.join(absent)} (the sched or futex probe)")
    graphs, missing = diff_runs(good_doc, good_dir, bad_doc, bad_dir, lambda _doc, cell: 0)
    notes += missing
    if not graphs and inferno.problem() is None and not missing:
        notes.append("no differential flame graph: no on-CPU profile")
    finding = "; ".join(parts) if parts else None
    own = {"last_good": good_side.graphs(), "first_bad": bad_side.graphs()}
    return Why(finding, graphs[0] if graphs else None, notes, own)


def _doc(run_dir: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("cells") else None


def _cpu(good: dict[str, Any], bad: dict[str, Any]) -> str | None:
    """`CPU per op 1.9x (95% CI 1.8-2.0): 2.1µs vs 1.1µs`, the first CPU metric both have."""
    for metric in CPU_METRICS:
        before, after = metric_values(good, metric), metric_values(bad, metric)
        if len(before) >= 2 and len(after) >= 2:
            entry = compare_samples(before, after, None)
            if entry.get("ratio") is None:
                continue
            who = "the client's CPU per op" if metric.startswith("client") else "CPU per op"
            ratio, _, interval = ratio_clause(entry).partition(", ")
            return (
                f"{who} {ratio} ({interval}): {human(entry['candidate_median'], time_ns=True)} "
                f"vs {human(entry['baseline_median'], time_ns=True)}"
            )
    return None
