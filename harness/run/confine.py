"""Where a run's workload processes live, so that none outlives the harness and none takes
the machine's memory: a memory cgroup per repeat (cgroup.py), the parent-death signal, an
environment marker, and a guardian process that ends them if the harness dies."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from harness.base.owner import Owner
from harness.run import leftovers
from harness.run.cgroup import Group, Hierarchy, find_hierarchy
from harness.run.guardian import Guardian
from harness.run.memlimit import human, repeat_limit

# `$0` is the cgroup.procs file: the shell moves itself there, then becomes the workload.
_JOIN = 'echo 0 >"$0" && exec "$@"'


class RepeatBox:
    """One repeat's cgroup (none in the fallback) and how to start the workload in it."""

    def __init__(self, group: Group | None, memory_max: int | None, token: str) -> None:
        self.group = group
        self.memory_max = memory_max
        self.env = {leftovers.ENV_MARK: token}
        self.oom_kills = 0  # read in end(), before the cgroup is removed

    def command(self, argv: list[str]) -> list[str]:
        """The workload's argv, wrapped; creates the cgroup (OSError if it cannot)."""
        if self.group is not None:
            self.group.create(self.memory_max)
            argv = ["/bin/sh", "-c", _JOIN, str(self.group.procs_file), *argv]
        setpriv = shutil.which("setpriv")
        # The kernel kills the workload itself if the harness dies (the guardian kills the rest).
        return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else argv

    def oom_reason(self) -> str | None:
        """`out of memory (limit …)` if the kernel killed a process of the repeat for it."""
        if self.memory_max is None or not self.oom_kills:
            return None
        return f"out of memory (limit {human(self.memory_max)})"

    def end(self) -> None:
        """Kill whatever the repeat left (children that left its process group too)."""
        if self.group is not None:
            self.oom_kills = self.group.oom_kills()
            self.group.remove()


class Confinement:
    """One run's: the owner group `<hierarchy>/harness/<token>` and the guardian."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.owner = Owner.current()
        found = find_hierarchy()
        self.hierarchy = found if isinstance(found, Hierarchy) else None
        limit = repeat_limit()  # checked also where it cannot apply
        self.memory_max = limit if self.hierarchy else None
        self.group: Group | None = None
        if self.hierarchy is None:
            warn(
                f"no memory limit per repeat ({found}); if the harness dies, its workload's "
                f"processes are still ended, found by their {leftovers.ENV_MARK} marker"
            )
        else:
            self.group = Group(self.hierarchy, self.hierarchy.root / self.owner.token)
            self.group.create()
        self.guardian = Guardian(self.owner.token, self.hierarchy)
        self.repeats = 0

    def watch(self, run_dir: Path) -> None:
        """The run directory the guardian marks abandoned if the harness dies."""
        self.guardian.watch(run_dir)

    def repeat(self) -> RepeatBox:
        self.repeats += 1
        group = None
        if self.group is not None:
            group = Group(self.group.hierarchy, self.group.path / f"r{self.repeats}")
        return RepeatBox(group, self.memory_max, self.owner.token)

    def close(self, finished: bool = True) -> None:
        """finished=False (the harness is failing): the guardian ends the workload's processes
        and marks the run abandoned, as if the harness had been killed."""
        if self.group is not None:
            self.group.remove()
        self.guardian.close(finished)
