"""The `gc` probe's part for a JVM (drivers/gc.py): bpf/jvmgc.bt.in on the JVM's own libjvm.so.

The USDT probes are found by the path of the libjvm the JVM mapped, so the script is written
per repeat (next to the probe's output) once /proc/PID/maps shows libjvm; then it runs as any
bpftrace script (drivers/bpftrace.py: SIGUSR1 at measure_start, SIGINT at measure_end). The
script prints one line per GC and per safepoint; the window's lines are summed here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.paths import REPO_ROOT
from harness.probes.drivers import btmaps
from harness.probes.drivers.bpftrace import BpftraceProbe
from harness.probes.drivers.process import ProbeProcess
from harness.probes.probe import ProbeSpec

TEMPLATE = REPO_ROOT / "bpf" / "jvmgc.bt.in"
LIBJVM = "libjvm.so"
MAPPED_WAIT_S = 10.0  # a JVM that was just exec'd maps libjvm within milliseconds
HIST_SLOTS = 64


def libjvm_path(pid: int) -> str | None:
    """The libjvm.so the process mapped, as /proc/PID/maps names it; None if none."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].strip().endswith("/" + LIBJVM):
                    return fields[5].strip()
    except OSError:
        return None
    return None


def is_java(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name == "java"
    except OSError:
        return False


def wait_libjvm(pid: int, timeout_s: float = MAPPED_WAIT_S) -> str | None:
    """Poll /proc/PID/maps until libjvm is mapped (a java process only); None if it is not."""
    deadline = time.monotonic() + timeout_s
    while True:
        path = libjvm_path(pid)
        if path is not None or not is_java(pid) or time.monotonic() >= deadline:
            return path
        time.sleep(0.02)


def log2_slot(ns: int) -> int:
    return min(max(ns, 1).bit_length() - 1, HIST_SLOTS - 1)


def summarize(lines: Sequence[str], pid: int) -> dict[str, Any]:
    """The window's events: GC cycles (full ones apart), GC pauses (safepoints with a GC
    inside) and other stops, each as count, total, max; GC pauses also as a log2 histogram."""
    p: dict[str, Any] = {
        "pid": pid,
        "comm": "java",
        "cycles": 0,
        "full_cycles": 0,
        "gc_ns_total": 0,
        "gc_stw_pauses": 0,
        "gc_stw_total_ns": 0,
        "gc_stw_max_ns": 0,
        "gc_stw_hist_log2_ns": [0] * HIST_SLOTS,
        "other_stw_pauses": 0,
        "other_stw_total_ns": 0,
        "other_stw_max_ns": 0,
    }
    for line in lines:
        event = btmaps.parse_line(line)
        if not event or event.get("type") != "printf":
            continue
        for text in str(event.get("data", "")).splitlines():
            words = text.split()
            if len(words) != 3 or words[0] not in ("gc", "sp"):
                continue
            ns, flag = int(words[1]), int(words[2])
            if words[0] == "gc":
                p["cycles"] += 1
                p["full_cycles"] += flag
                p["gc_ns_total"] += ns
                continue
            kind = "gc_stw" if flag else "other_stw"
            p[f"{kind}_pauses"] += 1
            p[f"{kind}_total_ns"] += ns
            p[f"{kind}_max_ns"] = max(p[f"{kind}_max_ns"], ns)
            if flag:
                p["gc_stw_hist_log2_ns"][log2_slot(ns)] += 1
    return p


class JvmGcProbe(BpftraceProbe):
    def __init__(self, spec: ProbeSpec, out_path: Path, script: Path) -> None:
        """`script`: where the script with the JVM's libjvm path is written."""
        super().__init__(dataclasses.replace(spec, script=script), out_path)
        self.libjvm: str | None = None

    def start(self, pids: Sequence[int]) -> None:
        pid = pids[0]
        self.libjvm = wait_libjvm(pid)
        if self.libjvm is None:
            # No pid in the reason: the run's notes group equal reasons into one line.
            self.unavailable = f"not a JVM: the process has no {LIBJVM} mapped"
            return
        self.script.parent.mkdir(parents=True, exist_ok=True)
        self.script.write_text(TEMPLATE.read_text().replace("LIBJVM", self.libjvm))
        super().start([pid])

    def _record(self, process: ProbeProcess) -> dict[str, Any]:
        data = super()._record(process)
        lines = data["lines"]
        start = self.start_mark if self.start_mark is not None else len(lines)
        end = self.end_mark if self.end_mark is not None else len(lines)
        summary = summarize(lines[start:end], self.pid or 0)
        data["libjvm"] = self.libjvm
        data["processes"] = [summary]
        data["totals"] = {k: v for k, v in summary.items() if k not in ("pid", "comm")}
        return data
