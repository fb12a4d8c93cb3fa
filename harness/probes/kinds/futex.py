"""`futex`: futex waits per process and operation, failed waits, wake calls, and the most
contended addresses with their waiters' stacks, from the libbpf collector bpf/build/futex."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.format.numbers import DASH, human, percent
from harness.probes import terminal
from harness.probes.drivers.collector import CollectorProbe
from harness.probes.kind import Data, DriverOptions, ProbeMetric, RepeatContext, declare
from harness.probes.probe import Probe, ProbeSpec
from harness.profiles import folded
from harness.profiles.graphs import FlameGraph
from harness.profiles.stacks import Stacks
from harness.rundoc.files import run_file

NAME = "futex"
METRICS = (ProbeMetric("futex_wait_ns_per_op", "ns", 30, column="futex wait/op"),)
TOP_REPORT_STACKS = 5
GRAPHS = (
    FlameGraph(
        NAME,
        "offcpu",
        "off-CPU",
        "offcpu_svg",
        "offcpu_folded",
        ("off-cpu", "offcpu"),
        rank=20,
        note_rank=30,
        missing="no off-CPU graph",
    ),
)


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return CollectorProbe(spec, out_path, options.now)


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """Successful waits of the client process (every waiting operation) and their time, per
    op."""
    if context.ops is None:
        return {}
    waits = wait_ns = 0.0
    for process in data.get("processes") or []:
        if process.get("pid") != context.client:
            continue
        for op in (process.get("ops") or {}).values():
            waits += op.get("count", 0)
            wait_ns += op.get("total_ns", 0)
    return {
        "futex_waits_per_op": waits / context.ops,
        "futex_wait_ns_per_op": wait_ns / context.ops,
    }


def section(name: str, data: Data, console: Console) -> None:
    """Waits per process, the most contended addresses with their hottest stack, totals."""
    ns, count, top = terminal.ns, terminal.count, terminal.TOP
    table = terminal.table(
        "futex: waits per process", ["pid", "comm", "waits", "wait time", "failed", "wakes"]
    )
    for p in data.get("processes") or []:
        ops = (p.get("ops") or {}).values()
        failed = sum(sum((op.get("failed") or {}).values()) for op in ops)
        table.add_row(
            str(p.get("pid")),
            str(p.get("comm")),
            count(sum(op.get("count", 0) for op in ops)),
            ns(sum(op.get("total_ns", 0) for op in ops)),
            count(failed),
            count(p.get("wake_calls", 0)),
        )
    console.print(table)
    table = terminal.table(
        f"futex: top {top} contended addresses",
        ["pid", "address", "waits", "wait time", "hottest stack"],
    )
    for lock in (data.get("top") or [])[:top]:
        stacks = sorted(lock.get("stacks") or [], key=lambda s: s.get("wait_ns", 0), reverse=True)
        table.add_row(
            str(lock.get("pid")),
            str(lock.get("uaddr")),
            count(lock.get("waits", 0)),
            ns(lock.get("wait_ns", 0)),
            terminal.innermost(str(stacks[0].get("folded", ""))) if stacks else "",
        )
    console.print(table)
    totals = data.get("totals") or {}
    console.print(
        f"futex totals: {count(totals.get('waits', 0))} waits, "
        f"{ns(totals.get('wait_ns', 0))} waiting, {count(totals.get('failed_waits', 0))} "
        f"failed, {count(totals.get('wake_calls', 0))} wake calls; "
        f"lost events {data.get('lost_events', 0)}"
    )


@dataclass
class FutexStack:
    folded: str
    waits: int = 0
    wait_ns: int = 0
    repeats: set[int] = field(default_factory=set)

    @property
    def frames(self) -> list[str]:
        return self.folded.split(";") if self.folded else []

    def short(self) -> str:
        """Innermost frames first: `syscall ← park ← run ← ...`."""
        text = terminal.innermost(self.folded)
        return text + (" ← …" if len(self.frames) > terminal.FRAMES_SHOWN else "")


def top_stacks(
    run_dir: Path, probe: Mapping[str, Any], limit: int = TOP_REPORT_STACKS
) -> tuple[list[FutexStack], list[str]]:
    """The most waited-on futex stacks over the repeats (summed by stack), and problems.

    A repeat entry's `top` is used when run.json has it; otherwise the raw file it names.
    """
    stacks: dict[str, FutexStack] = {}
    problems = []
    for r in probe.get("repeats") or []:
        top = r.get("top")
        if top is None and r.get("path"):
            if run_file(run_dir, r["path"]) is None:
                problems.append(
                    f"repeat {r.get('repeat')}: {r['path']} is not in the run directory"
                )
                continue
            try:
                raw = json.loads((run_dir / str(r["path"])).read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                problems.append(f"repeat {r.get('repeat')}: cannot read {r['path']}: {e}")
                continue
            top = raw.get("top") if isinstance(raw, Mapping) else None
        for lock in top or []:
            for s in lock.get("stacks") or []:
                stack = str(s.get("folded") or "")
                entry = stacks.setdefault(stack, FutexStack(stack))
                entry.waits += int(s.get("waits") or 0)
                entry.wait_ns += int(s.get("wait_ns") or 0)
                if r.get("repeat") is not None:
                    entry.repeats.add(int(r["repeat"]))
    ranked = sorted(stacks.values(), key=lambda s: s.wait_ns, reverse=True)
    return ranked[:limit], problems


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def report(run_dir: Path, probe: Data) -> list[str]:
    """The totals over the repeats and the most waited-on stacks."""
    out = []
    totals = probe.get("totals") or {}
    if totals:

        def n(key: str) -> str:
            return human(float(totals.get(key) or 0))

        line = (
            f"over the repeats: {n('waits')} futex waits, "
            f"{human(float(totals.get('wait_ns') or 0), time_ns=True)} waiting, "
            f"{n('failed_waits')} failed waits, {n('wake_calls')} wake calls"
        )
        out.append(f"<p>{_esc(line)}</p>")
    stacks, problems = top_stacks(run_dir, probe)
    out += [f'<p class="missing">{_esc(problem)}</p>' for problem in problems]
    if not stacks:
        if not problems and probe.get("paths"):
            out.append('<p class="dim">no contended futex stacks recorded</p>')
        return out
    total = float(totals.get("wait_ns") or 0)
    out += [
        f"<p>Top {len(stacks)} waiting stacks (summed over the repeats; innermost frame "
        "first, click for the whole stack):</p>",
        '<table><tr><th class="l">stack</th><th>waits</th><th>wait time</th>'
        "<th>share of wait time</th></tr>",
    ]
    for s in stacks:
        share = percent(s.wait_ns / total) if total else DASH
        whole = "\n".join(reversed(s.frames))
        out.append(
            f'<tr><td class="frame"><details><summary>{_esc(s.short())}</summary>'
            f"<pre>{_esc(whole)}</pre></details></td><td>{s.waits:,}</td>"
            f"<td>{_esc(human(float(s.wait_ns), time_ns=True))}</td><td>{_esc(share)}</td></tr>"
        )
    out.append("</table>")
    return out


def stacks(path: Path, data: Data, into: Stacks) -> None:
    """The waiters' stacks weighted by blocked ns: the off-CPU graph."""
    into.offcpu.update(folded.parse("\n".join(data.get("folded") or [])))


# Explain repeats only, in full (stacks): even --no-stacks costs each futex syscall of every
# process two programs, 1-4 % of the CPU on timers and lettuce (docs/probes.md).
KIND = declare(__name__, explain=True, collector=True)
