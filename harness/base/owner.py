"""Who runs a run: the harness process named so that a reused pid is not mistaken for it.

A pid alone is not enough once the harness is gone: the kernel hands it out again. The pid's
start time (field 22 of /proc/PID/stat, clock ticks since boot) and the boot's id tell the
process that holds it now from the one that started the run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def start_ticks(pid: int) -> int | None:
    """The process's start time since boot, in clock ticks; None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last `)`.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[19])  # field 22 of the whole line


def boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return "unknown"


@dataclass(frozen=True)
class Owner:
    pid: int
    start_ticks: int
    boot_id: str

    @classmethod
    def current(cls) -> Owner:
        ticks = start_ticks(os.getpid())
        assert ticks is not None  # our own /proc entry
        return cls(os.getpid(), ticks, boot_id())

    @property
    def token(self) -> str:
        """A name for the owner's cgroup and environment marker: `<pid>-<start ticks>`."""
        return f"{self.pid}-{self.start_ticks}"

    @classmethod
    def from_token(cls, token: str) -> Owner | None:
        """The owner of a token on this boot; None if it is not one."""
        pid, sep, ticks = token.partition("-")
        if not (sep and pid.isdigit() and ticks.isdigit()):
            return None
        return cls(int(pid), int(ticks), boot_id())

    def alive(self) -> bool:
        return self.boot_id == boot_id() and start_ticks(self.pid) == self.start_ticks
