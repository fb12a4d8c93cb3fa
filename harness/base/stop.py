"""Stopping a run cleanly: SIGINT/SIGTERM/SIGHUP raise a flag that the running repeat and the probes
poll, so the workload is stopped and the completed repeats are saved."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

# SIGHUP: the terminal closed or the ssh session dropped; stopped like SIGTERM.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopFlag:
    """Set by the SIGINT/SIGTERM/SIGHUP handler; the running repeat polls it."""

    def __init__(self) -> None:
        self.signum: int | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None


@contextmanager
def stop_on_signals() -> Iterator[StopFlag]:
    """These signals only raise a flag: the loop then stops the workload and saves the run."""
    flag = StopFlag()

    def handler(signum: int, frame: FrameType | None) -> None:
        flag.signum = signum
        if signum == signal.SIGHUP:
            _leave_terminal()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _leave_terminal() -> None:
    """A hung-up terminal fails every write (EIO): send what the harness still prints while
    it saves the run to /dev/null instead. Files and pipes keep their output."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if _on_terminal(fd, devnull):
            os.dup2(devnull, fd)
    os.close(devnull)


def _on_terminal(fd: int, devnull: int) -> bool:
    """isatty() is False once the terminal hung up: a character device other than
    /dev/null is taken for the terminal."""
    try:
        mode = os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISCHR(mode.st_mode) and mode.st_rdev != os.fstat(devnull).st_rdev
