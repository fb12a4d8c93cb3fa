"""Stopping a run cleanly: SIGINT/SIGTERM/SIGHUP raise a flag that the running repeat and the probes
poll, so the workload is stopped and the completed repeats are saved."""

from __future__ import annotations

import signal
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

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield flag
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
