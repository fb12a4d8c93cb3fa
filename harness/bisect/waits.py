"""The explanation's scheduling and wait figures (why.py): the first bad build's off-CPU time,
wake-ups, context switches and run-queue wait per op (the sched probe, measurement repeats)
and futex wait per op (the futex probe, explain repeats) against the last good build's, each
with its 95% interval; where wake-ups grew, the waker -> wakee pair whose wake-ups per op grew
most (off-wake stacks); where futex waits grew, the stacks waited on most. The words and the
thresholds are those of a run's findings (harness/report/mechanism.py)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from harness.format.numbers import human, percent
from harness.probes.kinds import futex, offwake, oncpu
from harness.probes.kinds.futex import top_stacks
from harness.report.data import Facts
from harness.report.mechanism import (
    MIN_FUTEX_WAITS,
    explain_values,
    grew,
    grown_pair,
    pair_counts,
    ratio_clause,
)
from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import Cell, RunDoc
from harness.stats import compare_samples, metric_values


@dataclass(frozen=True)
class Figure:
    metric: str
    label: str
    time: bool  # a time in ns
    explain: bool  # from the explain repeats (else the measurement repeats)


FIGURES = (
    Figure("offcpu_ns_per_op", "off-CPU per op", True, False),
    Figure("wakeups_per_op", "wake-ups per op", False, False),
    Figure("ctx_switches_per_op", "context switches per op", False, False),
    Figure("runq_ns_per_op", "run-queue wait per op", True, False),
    Figure("futex_wait_ns_per_op", "futex wait per op", True, True),
)


@dataclass(frozen=True)
class Side:
    """One build's run of the explanation and its one cell."""

    run: RunDoc
    run_dir: Path

    @property
    def cell(self) -> Cell:
        return self.run.cells[0]

    @cached_property
    def facts(self) -> Facts:
        return Facts(self.run, self.run_dir)

    def values(self, figure: Figure) -> list[float]:
        if figure.explain:
            return explain_values(self.run, self.cell, figure.metric)
        return metric_values(self.facts.cell_doc(self.cell), figure.metric)

    def graphs(self) -> dict[str, str]:
        """The cell's profiles' graphs (on-CPU, off-wake, futex off-CPU, wake-ups): paths."""
        profile = self.cell.profile
        named = {oncpu.NAME: profile.svg, offwake.NAME: profile.offwake_svg,
                 "futex_offcpu": profile.offcpu_svg, "wakeups": profile.wakeup_svg}  # fmt: skip
        return {key: str(self.run_dir / path) for key, path in named.items() if path}


def clauses(good: Side, bad: Side) -> tuple[list[str], list[str]]:
    """(`off-CPU per op 1.02x (95% CI 0.97-1.06): 4.1us vs 4.0us`, ... with the wake-up pair
    and the futex stacks after their figure; the figures neither run has)."""
    out: list[str] = []
    missing: list[str] = []
    for figure in FIGURES:
        before, after = good.values(figure), bad.values(figure)
        if len(before) < 2 or len(after) < 2:
            missing.append(figure.label)
            continue
        entry = compare_samples(before, after, None)
        if entry.get("ratio") is None and not max(after):
            out.append(f"{figure.label} 0 in both")
            continue
        if entry.get("ratio") is None:
            ratio = "from 0"
        else:
            ratio, _, interval = ratio_clause(entry).partition(", ")
            ratio = f"{ratio} ({interval})"
        text = (
            f"{figure.label} {ratio}: {human(entry['candidate_median'], time_ns=figure.time)} "
            f"vs {human(entry['baseline_median'], time_ns=figure.time)}"
        )
        if grew(before, after) is not None:
            more = _pair(good, bad) if figure.metric == "wakeups_per_op" else None
            if figure.metric == "futex_wait_ns_per_op":
                more = _futex_stacks(bad)
            text += f" ({more})" if more else ""
        out.append(text)
    return out, missing


def _pair(good: Side, bad: Side) -> str | None:
    """`most of the extra wake-ups: A threads waking B threads, 0.02 per op vs 0 (...)`."""
    grown = grown_pair(pair_counts(bad.facts, bad.cell), pair_counts(good.facts, good.cell))
    if grown is None:
        return None
    pair, before, after = grown
    more = grew(before, after) if min(len(before), len(after)) >= 2 else None
    if more is None:
        return None
    waker, wakee = pair
    return (
        f"most of the extra wake-ups: {waker} threads waking {wakee} threads, "
        f"{human(float(np.median(after)))} per op vs {human(float(np.median(before)))} "
        f"({ratio_clause(more)}; off-wake graph)"
    )


def _futex_stacks(bad: Side) -> str | None:
    """`most waits in syscall ← park ← … (79.3%) and in … (13.9%)`."""
    probe = bad.cell.probes.get(futex.NAME)
    if probe is None or int((probe.totals or {}).get("waits") or 0) < MIN_FUTEX_WAITS:
        return None
    stacks, _ = top_stacks(bad.run_dir, as_json(probe), limit=1_000_000)
    waits = sum(s.waits for s in stacks)
    top = sorted(stacks, key=lambda s: (-s.waits, s.folded))[:2]
    if not waits or not top:
        return None
    return "most waits in " + " and in ".join(
        f"{s.short()} ({percent(s.waits / waits)})" for s in top
    )
