"""The probe kinds: the only list of them. Everything that treats probes kind by kind
(session, doctor, metrics, run.json, tables, reports, profiles) iterates this.

Adding a kind: a module in harness/probes/kinds/ (see kind.py) and its collector, listed here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.format.metrics import SHARE_UNIT
from harness.probes.kind import ProbeKind, ProbeMetric
from harness.probes.kinds import bpftrace, futex, gc, offwake, oncpu, perfstat, sched
from harness.profiles.graphs import FlameGraph

# In this order: `all`, doctor's lines, the derived metrics of a repeat, `harness probe`.
NAMED: tuple[ProbeKind, ...] = (
    sched.KIND,
    futex.KIND,
    gc.KIND,
    oncpu.KIND,
    offwake.KIND,
    perfstat.KIND,
)
BPFTRACE = bpftrace.KIND  # `bt:PATH`: any number of scripts, named `bt:<stem>`
KINDS = (*NAMED, BPFTRACE)
# Other names --probes takes for a kind; run.json files of older runs use them as keys.
ALIASES = {"jvmgc": gc.NAME}


def names() -> tuple[str, ...]:
    return tuple(kind.name for kind in NAMED)


def collector_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in NAMED if kind.collector)


def kind_of(probe: str) -> ProbeKind:
    """The kind of a probe name (`sched`, `bt:syscalls_per_op`, an alias)."""
    name = ALIASES.get(probe, probe)
    for kind in NAMED:
        if kind.name == name:
            return kind
    if probe.startswith(f"{BPFTRACE.name}:"):
        return BPFTRACE
    raise KeyError(probe)


def metrics() -> list[ProbeMetric]:
    """Every kind's metrics, in rank order."""
    return sorted((m for kind in KINDS for m in kind.metrics), key=lambda m: m.rank)


def declared_metrics() -> list[dict[str, Any]]:
    """What a run with probes declares in run.json's `metrics`."""
    return [m.declaration() for m in metrics() if m.declared]


def columns() -> dict[str, str]:
    """The probe metrics the terminal table shows when present, with their headings."""
    return {m.name: m.column for m in metrics() if m.column is not None}


def labels() -> dict[str, str]:
    """The probe metrics the reports show when present, with their headings."""
    return {m.name: heading for m in metrics() if (heading := m.label or m.column) is not None}


def share_units() -> dict[str, str]:
    """The metrics that are shares of a whole (unit `share`), with their unit: the tables and
    reports write them as percentages whether or not a run declared them."""
    return {m.name: m.unit for m in metrics() if m.unit == SHARE_UNIT}


def flame_graphs() -> list[FlameGraph]:
    """Every kind's flame graphs, in the reports' order."""
    return sorted((g for kind in KINDS for g in kind.graphs), key=lambda g: g.rank)


def unavailable_here(probes: Iterable[str], root: Path = Path("/")) -> dict[str, str]:
    """Of these probes, those that cannot run on this machine, with why (their `harness
    doctor` line): run.json's `config.probes_unavailable`, said at a bench's start and end."""
    missing = {}
    for name in dict.fromkeys(probes):
        check = kind_of(name).check(root)
        if check.status in ("missing", "error"):
            missing[name] = check.detail
    return missing


def unavailable_line(missing: dict[str, str]) -> str:
    """The one line that says so."""
    reasons = "; ".join(f"{name}: {why}" for name, why in missing.items())
    return f"harness: probes unavailable on this machine, their figures missing: {reasons}"
