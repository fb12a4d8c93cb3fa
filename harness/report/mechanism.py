"""Findings that name the mechanism: why a strategy is slower than its baseline, from the
probe data alone (docs/findings.md). One rule a function; each compares the slower cell of a
pair with the faster one and says nothing unless the data's interval supports it.

- wake-ups: wake-ups per op (sched, measurement repeats) and the off-wake graph's waker ->
  wakee pair whose wake-ups per op grew most (offwake, explain repeats);
- CPU: CPU per op and the on-CPU differential graph's top growth frames (`profile.grew`);
- futex: futex wait per op (explain repeats) and the most waited-on stacks;
- GC: GC cycles per second and the share of the window in GC pauses (measurement repeats).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.format.numbers import DASH, human, human_ratio, percent
from harness.probes.kinds import futex, offwake
from harness.probes.kinds.futex import top_stacks
from harness.probes.metrics import op_count
from harness.report.data import (
    Code,
    Facts,
    Finding,
    cell_comparison,
    compared_cell,
    finding_text,
)
from harness.rundoc.files import run_file
from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import Cell, RunDoc
from harness.stats import ALPHA, compare_samples, metric_values, smallest_p

# Below these totals in the slower cell a rule says nothing: too few events to name a cause.
MIN_PAIR_WAKEUPS = 100
MIN_FUTEX_WAITS = 100
MIN_GC_CYCLES = 5
GROWTH_FRAMES = 3
CPU_METRICS = ("client_cpu_ns_per_op", "cpu_ns_per_op")
_THREAD_NUMBER = re.compile(r"\d+$")

Values = list[float]


@dataclass(frozen=True)
class Contrast:
    """A strategy slower than the other of its pair (one compared with the other: its twin
    or the baseline), by the headline metric's interval."""

    facts: Facts
    slow: Cell
    fast: Cell

    @property
    def run_dir(self) -> Path | None:
        return self.facts.run_dir

    def says(self, text: str) -> Finding:
        """`why A is slower than B: <text>`"""
        slow, fast = self.facts.name(self.slow), self.facts.name(self.fast)
        return ["why ", Code(slow), " is slower than ", Code(fast), ": " + text]

    def values(self, cell: Cell, metric: str) -> Values:
        """The metric in each of the cell's measurement repeats."""
        return metric_values(self.facts.cell_doc(cell), metric)


def supported(entry: Mapping[str, Any]) -> bool:
    """The 95% interval of the ratio excludes 1, and the U test agrees where it can decide
    (with 3 repeats a side it cannot: the interval alone then needs the samples apart)."""
    low, high = entry.get("ci95_low"), entry.get("ci95_high")
    if low is None or high is None or low <= 1 <= high:
        return False
    decidable = smallest_p(int(entry["n_baseline"]), int(entry["n_candidate"])) < ALPHA
    return bool(entry.get("significant")) or not decidable


def grew(fast: Values, slow: Values) -> dict[str, Any] | None:
    """The comparison slow / fast when its interval says slow is higher; None otherwise.
    A fast side of zeros has no ratio: then every slow value must be above every fast one."""
    if len(fast) < 2 or len(slow) < 2:
        return None
    entry = compare_samples(fast, slow, None)
    if entry["baseline_median"] == 0:
        decidable = smallest_p(len(fast), len(slow)) < ALPHA
        apart = min(slow) > max(fast) and (entry["significant"] or not decidable)
        return entry if apart else None
    return entry if supported(entry) and entry["ratio"] > 1 else None


def ratio_clause(entry: Mapping[str, Any]) -> str:
    if entry.get("ratio") is None:
        return "every repeat above every one of the other"
    low, high = human_ratio(entry["ci95_low"])[:-1], human_ratio(entry["ci95_high"])[:-1]
    return f"{human_ratio(entry['ratio'])}, 95% CI {low}{DASH}{high}"


# ---------------------------------------------------------------------------------------------
# Where the data is


def explain_repeats(run: RunDoc, cell: Cell) -> list[dict[str, Any]]:
    """The repeats that carried the stack probes: the explain repeats, or every repeat in a
    run from before the split."""
    key = run.config.explain_set
    return list(cell.repeats) if key is None else cell.variant(key)


def explain_values(run: RunDoc, cell: Cell, metric: str) -> Values:
    return metric_values({"repeats": explain_repeats(run, cell)}, metric)


def ops_by_round(run: RunDoc, cell: Cell) -> dict[int, float]:
    """Round (1-based) -> the op count of the repeat that carried the stack probes in it."""
    key = run.config.explain_set
    results = explain_repeats(run, cell)
    if key is None:
        rounds = list(range(1, len(results) + 1))
    else:
        rounds = list((cell.probe_rounds or {}).get(key) or [])
    out = {}
    for round_, result in zip(rounds, results, strict=False):
        ops = op_count(result)
        if ops:
            out[round_] = ops
    return out


def raw_files(run_dir: Path | None, cell: Cell, probe: str) -> list[tuple[int, Mapping[str, Any]]]:
    """(round, raw output) of each repeat of the probe whose file is in the run directory."""
    summary = cell.probes.get(probe)
    if run_dir is None or summary is None:
        return []
    out = []
    for entry in summary.repeats:
        rel = entry.path
        if not rel or run_file(run_dir, rel) is None:
            continue
        try:
            data = json.loads((run_dir / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, Mapping):
            out.append((entry.repeat, data))
    return out


def thread_group(comm: str) -> str:
    """`event-exec-3` -> `event-exec-N`: the threads of one pool are one name."""
    return _THREAD_NUMBER.sub("N", comm)


PairCounts = list[tuple[Counter[tuple[str, str]], float]]


def pair_counts(facts: Facts, cell: Cell) -> PairCounts:
    """Per explain repeat: (waker, wakee) thread groups -> wake-ups, and the repeat's ops.
    From the off-wake stacks: wakee comm first, waker comm last; a blocking not ended by
    another thread (a `[...]` waker) is no wake-up."""
    ops = ops_by_round(facts.run, cell)
    out: PairCounts = []
    for round_, data in raw_files(facts.run_dir, cell, offwake.NAME):
        if round_ not in ops:
            continue
        pairs: Counter[tuple[str, str]] = Counter()
        for stack in data.get("stacks") or []:
            frames = str(stack.get("folded") or "").split(";")
            if len(frames) < 2 or frames[-1].startswith("["):
                continue
            key = (thread_group(frames[-1]), thread_group(frames[0]))
            pairs[key] += int(stack.get("count") or 0)
        out.append((pairs, ops[round_]))
    return out


def pair_rate(repeats: PairCounts, pair: tuple[str, str]) -> Values:
    return [pairs[pair] / ops for pairs, ops in repeats]


def grown_pair(slow: PairCounts, fast: PairCounts) -> tuple[tuple[str, str], Values, Values] | None:
    """The (waker, wakee) pair whose wake-ups per op grew most from `fast` to `slow` (of those
    with MIN_PAIR_WAKEUPS at least), with its rates before and after; None when none grew or
    `fast` has no off-wake stacks to compare with."""
    totals: Counter[tuple[str, str]] = sum((pairs for pairs, _ in slow), Counter())
    growth = {
        pair: float(np.median(pair_rate(slow, pair)) - np.median(pair_rate(fast, pair) or [0.0]))
        for pair, total in totals.items()
        if total >= MIN_PAIR_WAKEUPS
    }
    if not growth or max(growth.values()) <= 0:
        return None
    pair = min(growth, key=lambda p: (-growth[p], p))
    before, after = pair_rate(fast, pair), pair_rate(slow, pair)
    return (pair, before, after) if before else None


# ---------------------------------------------------------------------------------------------
# The rules


def wakeups_rule(c: Contrast) -> Finding | None:
    """More wake-ups per op, and the waker -> wakee pair that grew most."""
    entry = grew(c.values(c.fast, "wakeups_per_op"), c.values(c.slow, "wakeups_per_op"))
    if entry is None:
        return None
    out = c.says(
        f"the client's threads are woken {human(entry['candidate_median'])} times per op vs "
        f"{human(entry['baseline_median'])} ({ratio_clause(entry)})"
    )
    grown = grown_pair(pair_counts(c.facts, c.slow), pair_counts(c.facts, c.fast))
    if grown is None:
        return out
    pair, before, after = grown
    if min(len(before), len(after)) >= 2:
        more = grew(before, after)
        if more is None:
            return out  # the pair's rates are not apart from the other cell's
        how = ratio_clause(more)
    else:
        how = "one explain repeat a side: no interval"
    waker, wakee = pair
    return [
        *out,
        "; most of the extra wake-ups: ",
        Code(waker),
        " threads waking ",
        Code(wakee),
        f" threads, {human(float(np.median(after)))} per op vs "
        f"{human(float(np.median(before)))} ({how}; off-wake graph)",
    ]


def cpu_rule(c: Contrast) -> Finding | None:
    """More CPU per op, and the frames whose share of the client's samples grew most."""
    for metric in CPU_METRICS:
        entry = grew(c.values(c.fast, metric), c.values(c.slow, metric))
        if entry is not None:
            break
    else:
        return None
    who = "the client's" if metric.startswith("client") else "its"
    out = c.says(
        f"{who} CPU per op is {human(entry['candidate_median'], time_ns=True)} vs "
        f"{human(entry['baseline_median'], time_ns=True)} ({ratio_clause(entry)})"
    )
    profile = c.slow.profile
    if profile.diff_baseline != c.fast.id:
        return out  # the differential graph is drawn the other way round (or not at all)
    frames = [g for g in profile.grew or [] if g.delta > 0]
    if frames:
        out.append("; the on-CPU differential graph's top growth (self share of the samples): ")
        for i, g in enumerate(frames[:GROWTH_FRAMES]):
            out += [", " if i else "", Code(g.frame)]
            out.append(f" {percent(g.baseline_share)} → {percent(g.share)}")
    return out


def futex_rule(c: Contrast) -> Finding | None:
    """More futex wait per op, and the stacks that waited most often."""
    metric = "futex_wait_ns_per_op"
    run = c.facts.run
    entry = grew(explain_values(run, c.fast, metric), explain_values(run, c.slow, metric))
    if entry is None:
        return None
    probe = c.slow.probes.get(futex.NAME)
    if probe is None or int((probe.totals or {}).get("waits") or 0) < MIN_FUTEX_WAITS:
        return None
    out = c.says(
        f"it waits {human(entry['candidate_median'], time_ns=True)} per op in futex waits vs "
        f"{human(entry['baseline_median'], time_ns=True)} ({ratio_clause(entry)})"
    )
    if c.run_dir is None:
        return out
    stacks, _ = top_stacks(c.run_dir, as_json(probe), limit=1_000_000)
    waits = sum(s.waits for s in stacks)
    # By waits, not wait time: a thread parked for the whole window is one long wait, idle.
    top = sorted(stacks, key=lambda s: (-s.waits, s.folded))[:2]
    if waits and top:
        out.append("; most waits in ")
        for i, s in enumerate(top):
            out += [" and in " if i else "", Code(s.short()), f" ({percent(s.waits / waits)})"]
    return out


def gc_rule(c: Contrast) -> Finding | None:
    """More GC cycles per second of the window, else a larger share of it in GC pauses."""
    window_s = c.facts.config.duration_s
    if window_s <= 0:
        return None

    def per_s(cell: Cell, metric: str) -> Values:
        return [v / window_s for v in c.values(cell, metric)]

    slow_cycles, fast_cycles = per_s(c.slow, "gc_cycles"), per_s(c.fast, "gc_cycles")
    if sum(slow_cycles) * window_s < MIN_GC_CYCLES:
        return None
    # ns of pause per s of window / 1e9: the share of the window
    slow_pause = [v / 1e9 for v in per_s(c.slow, "gc_pause_ns.total")]
    fast_pause = [v / 1e9 for v in per_s(c.fast, "gc_pause_ns.total")]
    pauses = (
        f"GC pauses {percent(float(np.median(slow_pause)))} of the time vs "
        f"{percent(float(np.median(fast_pause)))}"
        if slow_pause and fast_pause
        else None
    )
    cycles = grew(fast_cycles, slow_cycles)
    if cycles is not None:
        text = (
            f"the GC runs {human(cycles['candidate_median'])} cycles/s vs "
            f"{human(cycles['baseline_median'])} ({ratio_clause(cycles)})"
        )
        return c.says(text + (f", {pauses}" if pauses else ""))
    share = grew(fast_pause, slow_pause)
    if share is None or pauses is None:
        return None
    return c.says(
        f"{pauses} ({ratio_clause(share)}), in {human(float(np.median(slow_cycles)))} GC "
        f"cycles/s vs {human(float(np.median(fast_cycles)))}"
    )


RULES: tuple[Callable[[Contrast], Finding | None], ...] = (
    wakeups_rule,
    cpu_rule,
    futex_rule,
    gc_rule,
)


def contrasts(facts: Facts, metric: str | None) -> list[Contrast]:
    """Each strategy against the cell it is compared with (its twin's, or the baseline's) of
    its scenario and params, where the headline metric's interval says which of the two is
    slower."""
    if metric is None:
        return []
    out = []
    for cell in facts.cells:
        base = compared_cell(facts, cell)
        entry = cell_comparison(facts.index, cell, metric)
        if base is None or base is cell or entry is None or entry["better"] is None:
            continue
        if not supported(entry):
            continue
        higher = float(entry["ci95_low"]) > 1
        cell_slower = higher != (entry["better"] == "higher")
        slow, fast = (cell, base) if cell_slower else (base, cell)
        out.append(Contrast(facts, slow, fast))
    return out


def findings(facts: Facts, metric: str | None) -> list[Finding]:
    """Every rule on every contrast, in the rules' order."""
    out = []
    for contrast in contrasts(facts, metric):
        for rule in RULES:
            finding = rule(contrast)
            if finding is not None:
                out.append(finding)
    return out


def terminal_lines(run: RunDoc, run_dir: Path) -> list[str]:
    """The same findings as the reports', in plain text, for `harness run`'s summary."""
    facts = Facts(run, run_dir)
    return [finding_text(f) for f in findings(facts, facts.metric)]
