"""`bt:PATH`: any bpftrace script, given the measured client's pid as $1; its window is the
difference of the maps it prints at measure_start and at exit (its driver:
probes/drivers/bpftrace.py)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from harness.checks import PRIVILEGE_FIX, TRACEFS_FIX, Check
from harness.format.numbers import human, is_time_metric
from harness.probes import availability, terminal
from harness.probes.drivers.bpftrace import BpftraceProbe
from harness.probes.kind import Data, DriverOptions, declare
from harness.probes.probe import Probe, ProbeSpec

NAME = "bt"
# What run.json keeps of a repeat; the raw file has everything bpftrace printed.
RECORDED_KEYS = ("script", "diff", "not_diffed", "output", "notes")


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return BpftraceProbe(spec, out_path)


def check(root: Path) -> Check:
    """Whether `--probes bt:SCRIPT` works here; tracepoint and kfunc scripts need tracefs."""
    problem = availability.bpftrace_problem(root)
    if problem is not None:
        fix = "apt install bpftrace" if "not installed" in problem else PRIVILEGE_FIX
        return Check("probe bt", "missing", problem, fix)
    if not availability.tracefs_mounted(root):
        detail = (
            "uprobe scripts work; tracepoint and kfunc scripts (bpf/syscalls_per_op.bt) do not: "
            "bpftrace 0.17 reads them from tracefs, which is not mounted"
        )
        return Check("probe bt", "warn", detail, TRACEFS_FIX)
    return Check("probe bt", "ok", "works: bpftrace present, BPF allowed, tracefs mounted")


def numbers_per_op(diff: Mapping[str, Any], ops: float) -> dict[str, Any]:
    """A window difference divided by ops: plain and keyed numbers (not histograms)."""
    out: dict[str, Any] = {}
    for name, value in diff.items():
        if isinstance(value, int | float):
            out[name] = value / ops
        elif isinstance(value, Mapping) and all(isinstance(v, int | float) for v in value.values()):
            out[name] = {key: v / ops for key, v in value.items()}
    return out


def recorded(data: Data, ops: float | None) -> dict[str, Any]:
    entry = {key: data[key] for key in RECORDED_KEYS if key in data}
    if ops is not None:
        entry["per_op"] = numbers_per_op(data.get("diff") or {}, ops)
    return entry


def section(name: str, data: Data, console: Console) -> None:
    """Each map's window difference: numbers, the top keys of keyed ones, histograms."""
    top = terminal.TOP
    console.print(Text(f"{name}: window difference of {data.get('script')}", style="bold"))
    for map_name, value in (data.get("diff") or {}).items():
        shown = partial(human, time_ns=is_time_metric(map_name))
        if isinstance(value, int | float):
            console.print(f"  {map_name} = {shown(value)}")
        elif isinstance(value, Mapping) and all(isinstance(v, int | float) for v in value.values()):
            console.print(f"  {map_name}: top {top} of {len(value)}")
            ranked = sorted(value.items(), key=lambda kv: kv[1], reverse=True)[:top]
            for key, number in ranked:
                console.print(f"    {shown(number):>8}  {' '.join(str(key).split())}")
        elif isinstance(value, list):
            console.print(f"  {map_name} (histogram)")
            for bucket in value:
                if bucket.get("count"):
                    bounds = f"[{bucket.get('min')}, {bucket.get('max')}]"
                    console.print(f"    {bounds:>28} {terminal.count(bucket['count'])}")
    for note in data.get("notes") or []:
        console.print(Text(f"  note: {note}", style="yellow"))


KIND = declare(__name__, explain=True)  # any script: its cost is unknown
