"""The `perfstat` probe: `perf stat` counting the workload's processes over the measured
window only (one perf per process, so the client's counts are its own).

Each event is checked first, once per harness process (`perf stat -e EVENTS -- true`): an
event perf reports `<not supported>` (the hardware events on a VM without a PMU) is left out
and recorded as `unavailable: PMU not available` (hardware) or `unavailable: not supported`;
the others are counted. perf starts with its counters disabled (`-D -1`) and takes
`enable`/`disable` on a control FIFO at measure_start and measure_end, acknowledging each
(as the `oncpu` probe drives `perf record`); SIGINT then makes it write its CSV (`-x,`).
A counter that ran less than the whole time it was enabled (`running` < 100%: the PMU
multiplexed it with others) is scaled by perf and flagged `multiplexed`.
"""

from __future__ import annotations

import functools
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.stop import StopFlag
from harness.base.writes import write_json_atomic
from harness.probes.availability import perf_problem
from harness.probes.drivers.perfctl import SIGINT_EXITS, PerfProcess
from harness.probes.probe import FINISH_TIMEOUT_S, ProbeResult, ProbeSpec, aborted

HARDWARE = (
    "cycles",
    "instructions",
    "branches",
    "branch-misses",
    "cache-references",
    "cache-misses",
)
SOFTWARE = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
EVENTS = (*HARDWARE, *SOFTWARE)
CHECK_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Reading:
    value: float | None  # None: not counted (the task never ran) or not supported
    unit: str
    running_pct: float | None
    status: str | None  # "not supported", "not counted", None when counted


def parse_csv(text: str) -> dict[str, Reading]:
    """perf stat -x, lines: value,unit,event,run time,running %,metric,metric unit."""
    out: dict[str, Reading] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 5 or line.startswith("#"):
            continue
        raw, unit, event = fields[0].strip(), fields[1].strip(), fields[2].strip()
        if not event:
            continue
        try:
            pct: float | None = float(fields[4]) if fields[4].strip() else None
        except ValueError:
            pct = None
        if raw.startswith("<"):
            out[event] = Reading(None, unit, pct, raw.strip("<>"))
            continue
        try:
            out[event] = Reading(float(raw), unit, pct, None)
        except ValueError:
            continue
    return out


@functools.cache
def event_support() -> dict[str, str | None]:
    """{event: None if perf can count it here, else why not} (checked once)."""
    try:
        done = subprocess.run(
            ["perf", "stat", "-x,", "-e", ",".join(EVENTS), "--", "true"],
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return {event: f"perf stat did not run: {err}" for event in EVENTS}
    readings = parse_csv(done.stderr)
    support: dict[str, str | None] = {}
    for event in EVENTS:
        reading = readings.get(event)
        if reading is None:
            support[event] = "perf stat did not report it"
        elif reading.status == "not supported":
            support[event] = "PMU not available" if event in HARDWARE else "not supported"
        else:
            support[event] = None
    return support


def to_count(event: str, reading: Reading) -> float | None:
    """The event's count (task-clock in ns; perf prints msec)."""
    if reading.value is None:
        return 0.0 if reading.status == "not counted" else None
    if event == "task-clock" and reading.unit == "msec":
        return reading.value * 1e6
    return reading.value


class _OnePerf(PerfProcess):
    """perf stat on one process, writing its CSV to `out`."""

    def __init__(self, pid: int, events: Sequence[str], out: Path) -> None:
        self.pid = pid
        self.out = out
        argv = ["perf", "stat", "-x,", "-e", ",".join(events), "-p", str(pid), "-D", "-1"]
        super().__init__([*argv, "-o", str(out)], scratch=(out,))

    def failure(self) -> str:
        return f"perf stat: {(self.stderr_lines() or ['did not start counting'])[0].strip()}"


class PerfStatProbe:
    def __init__(self, spec: ProbeSpec, out_path: Path) -> None:
        self.spec = spec
        self.out_path = out_path
        self.perfs: list[_OnePerf] = []
        self.unavailable: str | None = None
        self.notes: list[str] = []
        self.events: list[str] = []
        self.missing: dict[str, str] = {}
        self.started = self.ended = 0

    def start(self, pids: Sequence[int]) -> None:
        self.unavailable = perf_problem()
        if self.unavailable:
            return
        support = event_support()
        self.events = [e for e in EVENTS if support.get(e) is None]
        self.missing = {e: why for e in EVENTS if (why := support.get(e)) is not None}
        if not self.events:
            self.unavailable = "perf stat can count none of its events here"
            return
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        for pid in pids:
            out = self.out_path.with_name(f"{self.out_path.stem}.{pid}.csv")
            try:
                self.perfs.append(_OnePerf(pid, self.events, out))
            except OSError as err:
                self.unavailable = f"cannot start perf stat: {err.strerror}"
                self._kill()
                return

    def wait_attached(self, deadline: float, stop: StopFlag | None) -> None:
        # perf reads its control FIFO once its counters are open (and disabled).
        for perf in self.perfs:
            if not perf.command("disable", deadline, stop):
                stopped = stop is not None and stop.requested
                self.unavailable = "interrupted before it attached" if stopped else perf.failure()
                self._kill()
                return

    def window_start(self) -> None:
        self.started = time.monotonic_ns()
        for perf in self.perfs:
            if not perf.command("enable"):
                self.notes.append(f"perf stat of pid {perf.pid} did not acknowledge `enable`")

    def window_end(self) -> None:
        for perf in self.perfs:
            if not perf.command("disable"):
                self.notes.append(f"perf stat of pid {perf.pid} did not acknowledge `disable`")
        self.ended = time.monotonic_ns()
        for perf in self.perfs:
            perf.interrupt()

    def finish(self) -> ProbeResult:
        result = ProbeResult(self.spec.name, unavailable=self.unavailable)
        if not self.perfs:
            return result
        processes = []
        try:
            for perf in self.perfs:
                assert perf.process is not None
                code = perf.process.wait(FINISH_TIMEOUT_S)
                if code is None:
                    result.error = f"perf stat did not exit within {FINISH_TIMEOUT_S:g} s"
                    return result
                if code not in SIGINT_EXITS or not perf.out.is_file():
                    result.error = perf.failure()
                    return result
                processes.append(self._process(perf))
        finally:
            self._kill()
        data = {
            "probe": "perfstat",
            "pids": [p.pid for p in self.perfs],
            "window_ns": self.ended - self.started,
            "events": self.events,
            "unavailable_events": self.missing,
            "processes": processes,
            "notes": self.notes,
            "totals": {
                event.replace("-", "_"): sum(p["counts"].get(event) or 0 for p in processes)
                for event in self.events
            },
        }
        write_json_atomic(self.out_path, data)
        result.path, result.data = self.out_path, data
        return result

    def abort(self, reason: str) -> ProbeResult:
        self._kill()
        return aborted(self.spec, self.unavailable, reason)

    def _process(self, perf: _OnePerf) -> dict[str, Any]:
        readings = parse_csv(perf.out.read_text(errors="replace"))
        counts: dict[str, float | None] = {}
        multiplexed: dict[str, float] = {}
        for event in self.events:
            reading = readings.get(event)
            counts[event] = to_count(event, reading) if reading is not None else None
            pct = reading.running_pct if reading is not None else None
            if reading is not None and reading.value is not None and pct is not None and pct < 100:
                multiplexed[event] = pct
        return {"pid": perf.pid, "counts": counts, "multiplexed": multiplexed}

    def _kill(self) -> None:
        for perf in self.perfs:
            perf.kill()
