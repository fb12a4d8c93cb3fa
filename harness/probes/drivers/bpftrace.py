"""Driver of `bpftrace -f json SCRIPT CLIENT_PID` (the pid is the script's $1).

bpftrace 0.17 has no window of its own: it prints every map on SIGUSR1 and again when it
exits on SIGINT. So SIGUSR1 at measure_start takes the start snapshot, SIGINT at
measure_end the final one, and the window is their difference (see btmaps).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.base.stop import StopFlag
from harness.base.writes import write_json_atomic
from harness.probes.availability import bpftrace_problem, tracefs_mounted
from harness.probes.drivers import btmaps
from harness.probes.drivers.process import ProbeProcess
from harness.probes.probe import FINISH_TIMEOUT_S, ProbeResult, ProbeSpec, aborted, not_attached

# bpftrace warns about this on every start under kernels that account BPF memory to cgroups
# (>= 5.11), where the limit no longer matters.
BENIGN_STDERR = ("couldn't set RLIMIT_MEMLOCK",)
# bpftrace 0.17 logs this as an ERROR from its probes' destructors, after it has printed its
# final maps, and exits non-zero; later bpftrace logs it as a WARNING. The process's exit closes
# the fds anyway, so the window's maps stand, with the line kept as a note.
TEARDOWN_ERRORS = ("failed to close perf event FDs for probe",)
SIGINT_REPEAT_S = 1.0
HANDLED = (signal.SIGUSR1, signal.SIGINT)
TRACEFS_HINT = "tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing"


def _benign(line: str) -> bool:
    return any(text in line for text in BENIGN_STDERR)


def _teardown(line: str) -> bool:
    return any(text in line for text in TEARDOWN_ERRORS)


def failed_only_in_teardown(stderr: Sequence[str]) -> bool:
    """Whether every error bpftrace logged came from detaching, after its final maps."""
    errors = [line for line in stderr if "ERROR" in line]
    return bool(errors) and all(_teardown(line) for line in errors)


def interrupt_until_exit(process: ProbeProcess, timeout_s: float) -> int | None:
    """Wait for the exit that the window's SIGINT asked for; the exit code, or None.

    bpftrace 0.17 loses a SIGINT that arrives while it prints its maps (as it does for a while
    after SIGUSR1 when the window is short): its poll loop looks at the flag only when
    epoll_wait is interrupted. So the SIGINT is repeated, but only while bpftrace still
    catches it: once it has left its poll loop it resets SIGINT to the default action (to
    print its final maps and detach), and a repeat there would kill it with its maps half
    printed or its probes half detached.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        code = process.wait(min(SIGINT_REPEAT_S, max(0.0, deadline - time.monotonic())))
        if code is not None or time.monotonic() >= deadline:
            return code
        if process.caught_signals() & (1 << (signal.SIGINT - 1)):
            process.send(signal.SIGINT)


def is_attached_line(line: str) -> bool:
    event = btmaps.parse_line(line)
    return event is not None and event.get("type") == "attached_probes"


class BpftraceProbe:
    """With or without a workload, its window runs from SIGUSR1 to SIGINT."""

    def __init__(self, spec: ProbeSpec, out_path: Path) -> None:
        assert spec.script is not None
        self.spec = spec
        self.script = spec.script
        self.out_path = out_path
        self.process: ProbeProcess | None = None
        self.unavailable: str | None = None
        self.pid: int | None = None
        self.start_mark: int | None = None  # stdout lines before SIGUSR1
        self.end_mark: int | None = None  # stdout lines before SIGINT

    def start(self, pids: Sequence[int]) -> None:
        self.unavailable = bpftrace_problem()
        if self.unavailable:
            return
        self.pid = pids[0]
        # Line-buffered: a pipe would otherwise hold the SIGUSR1 snapshot until exit.
        argv = ["bpftrace", "-B", "line", "-f", "json", str(self.script), str(self.pid)]
        try:
            self.process = ProbeProcess(argv)
        except OSError as err:
            self.unavailable = f"cannot start bpftrace: {err.strerror}"

    def wait_attached(self, deadline: float, stop: StopFlag | None) -> None:
        process = self.process
        if process is None:
            return
        # bpftrace 0.17 prints attached_probes before its SIGUSR1 handler is in place.
        if process.wait_for_line(is_attached_line, deadline, stop) and (
            process.wait_for_handlers(HANDLED, deadline, stop)
        ):
            return
        self.unavailable = not_attached(process, stop, " and ready for signals", self._failure)
        self.process = None

    def window_start(self) -> None:
        if self.process is not None:
            self.start_mark = len(self.process.lines)
            self.process.send(signal.SIGUSR1)

    def window_end(self) -> None:
        if self.process is not None:
            self.end_mark = len(self.process.lines)
            self.process.send(signal.SIGINT)

    def finish(self) -> ProbeResult:
        result = ProbeResult(self.spec.name, unavailable=self.unavailable)
        process = self.process
        if process is None:
            return result
        code = interrupt_until_exit(process, FINISH_TIMEOUT_S)
        if code is None:
            process.kill()
            result.error = (
                f"bpftrace did not exit within {FINISH_TIMEOUT_S:g} s of SIGINT (bpftrace 0.17 "
                "can hang printing ustack() maps on SIGUSR1)"
            )
        elif code != 0 and not failed_only_in_teardown(process.stderr_lines(_benign)):
            result.error = self._failure(process)
        else:
            data = self._record(process)
            try:
                self.out_path.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomic(self.out_path, data)
            except OSError as err:
                result.error = f"cannot write {self.out_path}: {err.strerror or err}"
            else:
                result.path, result.data = self.out_path, data
        return result

    def abort(self, reason: str) -> ProbeResult:
        if self.process is not None:
            self.process.kill()
        return aborted(self.spec, self.unavailable, reason)

    def _record(self, process: ProbeProcess) -> dict[str, Any]:
        lines = list(process.lines)
        start_mark = self.start_mark if self.start_mark is not None else len(lines)
        end_mark = self.end_mark if self.end_mark is not None else len(lines)
        window = [e for e in map(btmaps.parse_line, lines[start_mark:end_mark]) if e]
        after = [e for e in map(btmaps.parse_line, lines[end_mark:]) if e]
        start_events, snapshot_end = btmaps.first_snapshot(window)
        notes = []
        if not start_events:
            notes.append(
                "no map was printed between SIGUSR1 and SIGINT: the window difference is the "
                "whole run (bpftrace had not printed its start snapshot, or the script has no "
                "maps)"
            )
        notes += [
            f"bpftrace: {line.strip()} (when detaching, after its final maps)"
            for line in process.stderr_lines(_benign)
            if _teardown(line)
        ]
        start = btmaps.maps_of(start_events)
        end = btmaps.maps_of(after)
        diff, not_diffed = btmaps.diff_snapshots(start, end)
        output = [e for e in window[snapshot_end:] + after if not btmaps.is_map(e)]
        return {
            "probe": self.spec.name,
            "script": str(self.script),
            "pid": self.pid,
            "start": start,
            "end": end,
            "output": output,
            "diff": diff,
            "not_diffed": not_diffed,
            "notes": notes,
            "stderr": process.stderr_lines(_benign),
            "lines": lines,
        }

    def _failure(self, process: ProbeProcess) -> str:
        code = process.wait(0)
        lines = process.stderr_lines(_benign)
        errors = [line for line in lines if "ERROR" in line]
        reason = (errors or lines or [f"exited with code {code}"])[0].strip()
        if not tracefs_mounted() and ("tracepoint" in reason or "tracing" in reason):
            reason += f" ({TRACEFS_HINT})"
        return f"bpftrace: {reason}"
