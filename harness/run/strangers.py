"""Workload processes that are not this harness's: they share the CPUs with the measured
workload and skew its figures, so the harness names them before it starts."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path


def _program(pid: int) -> Path | None:
    """The file the process runs: its executable, or the script an interpreter runs."""
    proc = Path(f"/proc/{pid}")
    try:
        exe = Path(os.readlink(proc / "exe"))
        args = (proc / "cmdline").read_bytes().split(b"\0")
        cwd = Path(os.readlink(proc / "cwd"))
    except OSError:
        return None
    if len(args) > 1 and args[1] and not args[1].startswith(b"-"):
        script = cwd / os.fsdecode(args[1])
        with contextlib.suppress(OSError):
            if script.is_file():
                return script.resolve()
    return exe


def running(binaries: Iterable[Path]) -> list[str]:
    """`name (pid N)` of each process running one of the binaries, other than this one."""
    wanted = {b.resolve() for b in binaries}
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            program = _program(int(entry.name))
            if program in wanted:
                found.append(f"{program.name} (pid {entry.name})")
    return found
