"""`perfstat`: `perf stat` counters of the workload's processes over the measured window,
each per op (the driver is harness/probes/drivers/perfstat.py): JMH's perfnorm for any workload.
Hardware events need a PMU: on a VM without one they are `unavailable: PMU not available`
and the software events still count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from harness.checks import PRIVILEGE_FIX, Check
from harness.format.numbers import DASH, percent
from harness.probes import availability, terminal
from harness.probes.drivers.perfstat import EVENTS, PerfStatProbe, event_support
from harness.probes.kind import Data, DriverOptions, ProbeMetric, RepeatContext, declare
from harness.probes.probe import Probe, ProbeSpec

NAME = "perfstat"


def metric_name(event: str) -> str:
    """`perf_task_clock_ns_per_op`, `perf_cache_misses_per_op`."""
    unit = "_ns" if event == "task-clock" else ""
    return f"perf_{event.replace('-', '_')}{unit}_per_op"


# Declared (compared against the baseline): the software events, which count everywhere.
DECLARED = ("task-clock", "context-switches", "page-faults")
METRICS = (
    *(
        ProbeMetric(
            metric_name(event),
            "ns" if event == "task-clock" else "events",
            70 + i,
            label=f"perf {event}/op",
            declared=event in DECLARED,
        )
        for i, event in enumerate(EVENTS)
    ),
    ProbeMetric("perf_ipc", "instructions/cycle", 90, label="perf IPC", declared=False),
)


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return PerfStatProbe(spec, out_path)


def check(root: Path) -> Check:
    """Whether `--probes perfstat` works here, and which events count."""
    found = availability.perf_problem(root)
    if found is not None:
        return Check("probe perfstat", "missing", found, PRIVILEGE_FIX)
    if root != Path("/"):
        return Check("probe perfstat", "ok", "works: perf may count")
    missing = {e: why for e, why in event_support().items() if why is not None}
    if len(missing) == len(EVENTS):
        return Check(
            "probe perfstat", "missing", "perf stat counts none of its events", PRIVILEGE_FIX
        )
    if missing:
        reasons = sorted(set(missing.values()))
        return Check(
            "probe perfstat",
            "warn",
            f"software events only: {', '.join(missing)} unavailable ({'; '.join(reasons)})",
            "nothing to do on a VM without a PMU; on bare metal check `perf list hw`",
        )
    return Check("probe perfstat", "ok", "works: every event counts")


def client_counts(data: Data, client: int) -> dict[str, Any]:
    for process in data.get("processes") or []:
        if process.get("pid") == client:
            return dict(process.get("counts") or {})
    return {}


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """The client's counts per op, and its IPC."""
    if context.ops is None:
        return {}
    counts = client_counts(data, context.client)
    metrics: dict[str, Any] = {
        metric_name(event): float(value) / context.ops
        for event, value in counts.items()
        if isinstance(value, int | float)
    }
    cycles, instructions = counts.get("cycles"), counts.get("instructions")
    if isinstance(cycles, int | float) and isinstance(instructions, int | float) and cycles:
        metrics["perf_ipc"] = instructions / cycles
    return metrics


def recorded(data: Data, ops: float | None) -> dict[str, Any]:
    """The window, the totals of every process, and in `notes` the events not counted
    (`cycles: unavailable: PMU not available`) and those multiplexed."""
    notes = [
        f"{e}: unavailable: {why}" for e, why in (data.get("unavailable_events") or {}).items()
    ]
    for process in data.get("processes") or []:
        for event, pct in (process.get("multiplexed") or {}).items():
            notes.append(f"{event}: multiplexed in pid {process.get('pid')}: running {pct}%")
    out = {key: data[key] for key in ("window_ns", "totals") if key in data}
    return out | ({"notes": notes} if notes else {})


def section(name: str, data: Data, console: Console) -> None:
    """Each process's counts, the unavailable events, the multiplexed ones."""
    processes = data.get("processes") or []
    table = terminal.table(
        "perfstat: counts over the window", ["event", *(str(p.get("pid")) for p in processes)]
    )
    for event in data.get("events") or []:
        row = []
        for p in processes:
            value = (p.get("counts") or {}).get(event)
            shown = DASH if value is None else terminal.count(float(value))
            if event == "task-clock" and value is not None:
                shown = terminal.ns(float(value))
            pct = (p.get("multiplexed") or {}).get(event)
            row.append(shown + (f" (running {percent(pct / 100)})" if pct is not None else ""))
        table.add_row(event, *row)
    console.print(table)
    for event, why in (data.get("unavailable_events") or {}).items():
        console.print(f"  {event}: unavailable: {why}", style="yellow")
    for note in data.get("notes") or []:
        console.print(f"  note: {note}", style="yellow")


KIND = declare(__name__, explain=True)  # a perf stat process per workload process
