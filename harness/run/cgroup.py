"""Memory cgroups for the workload: `<hierarchy>/harness/<owner token>/r<N>` per repeat.

Each repeat's processes (the workload and whatever it starts, `setsid` children too) join a
cgroup of their own with a memory limit, so an oversized cell is OOM-killed alone and its
processes can all be found and killed. cgroup v2 is used where its memory controller is;
otherwise the v1 memory hierarchy (hybrid machines); otherwise nothing (see confine.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
HARNESS_DIR = "harness"
OFF_ENV = "HARNESS_CGROUPS"
KILL_TIMEOUT_S = 2.0
POLL_S = 0.02


@dataclass(frozen=True)
class Hierarchy:
    """Where the harness makes its cgroups, and the file names of this cgroup version."""

    version: int  # 1 or 2
    root: Path  # <mount>/harness

    @property
    def limit_file(self) -> str:
        return "memory.max" if self.version == 2 else "memory.limit_in_bytes"

    @property
    def events_file(self) -> str:
        return "memory.events" if self.version == 2 else "memory.oom_control"


def _mounts() -> list[tuple[str, Path, set[str]]]:
    """(fstype, mount point, super options) of every cgroup mount."""
    found = []
    with contextlib.suppress(OSError):
        for line in MOUNTINFO.read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _, options = ([*right.split(), "", "", ""])[:3]
            if fstype in ("cgroup", "cgroup2"):
                found.append((fstype, Path(left.split()[4]), set(options.split(","))))
    return found


def find_hierarchy() -> Hierarchy | str:
    """The hierarchy to use, created and set up; else why there is none."""
    if os.environ.get(OFF_ENV) == "off":  # e.g. a container whose cgroups are not ours
        return f"{OFF_ENV}=off"
    problems = []
    for fstype, mount, options in _mounts():
        try:
            if fstype == "cgroup2" and "memory" in _words(mount / "cgroup.controllers"):
                root = mount / HARNESS_DIR
                _enable_memory(mount)
                root.mkdir(exist_ok=True)
                _enable_memory(root)
                return Hierarchy(2, root)
            if fstype == "cgroup" and "memory" in options:
                root = mount / HARNESS_DIR
                root.mkdir(exist_ok=True)
                return Hierarchy(1, root)
        except OSError as err:
            problems.append(f"{mount}: {err.strerror}")
    if problems:
        return f"cannot make memory cgroups ({'; '.join(problems)})"
    return "no cgroup memory controller is mounted"


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _enable_memory(group: Path) -> None:
    """Children of a v2 cgroup only get memory.max once the parent delegates `memory`."""
    if "memory" not in _words(group / "cgroup.subtree_control"):
        (group / "cgroup.subtree_control").write_text("+memory")


class Group:
    """One cgroup directory of the harness."""

    def __init__(self, hierarchy: Hierarchy, path: Path) -> None:
        self.hierarchy = hierarchy
        self.path = path

    def create(self, memory_max: int | None = None) -> None:
        self.path.mkdir(exist_ok=True)
        if self.hierarchy.version == 2 and memory_max is None:
            _enable_memory(self.path)  # a parent of repeat groups
        if memory_max is not None:
            (self.path / self.hierarchy.limit_file).write_text(str(memory_max))

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def oom_kills(self) -> int:
        """Processes the kernel OOM-killed in this cgroup for going over its limit."""
        try:
            text = (self.path / self.hierarchy.events_file).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def pids(self) -> list[int]:
        """Every process in this cgroup and the ones below it."""
        found: list[int] = []
        for folder, _, _ in os.walk(self.path):
            with contextlib.suppress(OSError):
                found += [int(p) for p in (Path(folder) / "cgroup.procs").read_text().split()]
        return found

    def kill(self) -> bool:
        """SIGKILL every process in it and below; True once none is left."""
        end = time.monotonic() + KILL_TIMEOUT_S
        kill_file = self.path / "cgroup.kill"
        while True:
            pids = self.pids()
            if not pids:
                return True
            if time.monotonic() > end:
                return False
            if self.hierarchy.version == 2 and kill_file.exists():
                with contextlib.suppress(OSError):
                    kill_file.write_text("1")
            else:  # v1: one by one, again for any a dying parent forked meanwhile
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(POLL_S)

    def remove(self) -> None:
        """Kill what is left, then remove it and its children (deepest first)."""
        if not self.path.is_dir():
            return
        self.kill()
        for folder, _, _ in sorted(os.walk(self.path), key=lambda w: -len(w[0])):
            end = time.monotonic() + KILL_TIMEOUT_S
            while True:
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last exits are accounted
                    if time.monotonic() > end:
                        break
                    time.sleep(POLL_S)


def owner_groups(hierarchy: Hierarchy) -> dict[str, Group]:
    """Owner token -> its run group, for every harness that left one."""
    try:
        names = [p.name for p in hierarchy.root.iterdir() if p.is_dir()]
    except OSError:
        return {}
    return {name: Group(hierarchy, hierarchy.root / name) for name in names}
