"""What a harness that died leaves behind, found by its owner token: the processes of its
workloads (its cgroup, and the environment marker every workload process inherits) and the
FIFO folders of its perf probes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

from harness.probes.drivers.perfctl import perf_prefix
from harness.run.cgroup import Group, Hierarchy

ENV_MARK = "HARNESS_OWNER"  # in every workload process: the owner token of its harness
KILL_TIMEOUT_S = 2.0


def marked_pids(token: str) -> list[int]:
    """Processes whose environment carries the token (those we may read: ours, or all as
    root). A process that rewrote its environment escapes this; the cgroup does not."""
    mark = f"{ENV_MARK}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


def end_processes(token: str, hierarchy: Hierarchy | None) -> int:
    """SIGKILL every leftover workload process of the owner; how many there were."""
    group = Group(hierarchy, hierarchy.root / token) if hierarchy is not None else None
    pids = set(marked_pids(token)) | set(group.pids() if group else [])
    end = time.monotonic() + KILL_TIMEOUT_S
    left = pids
    while left and time.monotonic() < end:
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
        left = set(marked_pids(token))
    if group is not None:
        group.remove()
    return len(pids)


def remove_perf_folders(token: str) -> int:
    """The perf FIFO folders the owner left in the temporary directory; how many."""
    root = Path(tempfile.gettempdir())
    folders = list(root.glob(f"{perf_prefix(token)}*"))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    return len(folders)
