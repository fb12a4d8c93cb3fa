"""The /tmp/perf-PID.map files a repeat's JVMs leave (perf's symbols for JIT code, ~300 KB
each): removed once the repeat's probes are done with them (perf script, the collectors'
symbolizer), and only those of processes the repeat started.

A pid the workload lists in its ready event is taken as its own only if it is in the
workload's session then (run_repeat starts the workload in a new session, which its
descendants inherit and no other process can join). Its map is removed afterwards only if the
process is gone (a live pid may be someone else's by now), the map is a regular file owned by
the process's user and was written after the process started.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.base.owner import start_ticks

MAP_DIR = Path("/tmp")
BOOT_TIME_SLACK_S = 1.0  # /proc/stat's btime is in whole seconds


@dataclass(frozen=True)
class Started:
    """A process of the workload, as seen while it ran."""

    pid: int
    uid: int
    ticks: int  # its start, in clock ticks since boot

    @property
    def map_path(self) -> Path:
        return MAP_DIR / f"perf-{self.pid}.map"


def started(pids: Iterable[int], session: int) -> list[Started]:
    """Those of `pids` that run in `session` now (the workload's), with their user and start."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getsid(pid) != session:
                continue
            uid = os.stat(f"/proc/{pid}").st_uid
            ticks = start_ticks(pid)
            if ticks is not None:
                found.append(Started(pid, uid, ticks))
    return found


def remove(processes: Iterable[Started]) -> list[Path]:
    """Remove the perf maps of the processes that are gone; returns the maps removed."""
    boot = _boot_time()
    removed: list[Path] = []
    if boot is None:
        return removed
    tick_s = 1 / os.sysconf("SC_CLK_TCK")
    for proc in processes:
        if start_ticks(proc.pid) is not None:
            continue  # still running, or the pid is another process's now
        path = proc.map_path
        try:
            info = path.lstat()
        except OSError:
            continue
        if (
            stat.S_ISREG(info.st_mode)
            and info.st_uid == proc.uid
            and info.st_mtime >= boot + proc.ticks * tick_s - BOOT_TIME_SLACK_S
        ):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


def _boot_time() -> float | None:
    """When the machine booted (wall clock, whole seconds), from /proc/stat."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    return None
