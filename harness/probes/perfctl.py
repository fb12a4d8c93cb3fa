"""perf's control FIFOs (`--control fifo:CTL,ACK`), shared by the `oncpu` and `perfstat`
probes: the two FIFOs in a temporary folder of their own, a command written to one and
perf's `ack` awaited on the other, and the clean-up of both."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import tempfile
import time
from pathlib import Path

from harness.base.stop import StopFlag
from harness.probes.process import ProbeProcess

PERF_PREFIX = "harness-perf-"


def perf_prefix(token: str) -> str:
    """Prefix of the FIFO folders of a harness's perf probes: `harness-perf-<owner token>-`
    (a later harness removes those of one that died: run/leftovers.py)."""
    return f"{PERF_PREFIX}{token}-"


class PerfControl:
    def __init__(self, prefix: str) -> None:
        """Creates the folder (named `<prefix>...` in the temporary directory) and opens the
        FIFOs; nothing is left behind when that fails."""
        self.dir = Path(tempfile.mkdtemp(prefix=prefix))
        self.ctl: int | None = None
        self.ack: int | None = None
        ctl, ack = self.dir / "ctl", self.dir / "ack"
        self.option = f"fifo:{ctl},{ack}"  # perf's --control argument
        try:
            os.mkfifo(ctl)
            os.mkfifo(ack)
            # Read-write opens of a FIFO never block, whichever end perf has opened yet.
            self.ctl = os.open(ctl, os.O_RDWR)
            self.ack = os.open(ack, os.O_RDWR | os.O_NONBLOCK)
        except OSError:
            self.close()
            raise

    def command(
        self, word: str, process: ProbeProcess, deadline: float, stop: StopFlag | None = None
    ) -> bool:
        """Writes a control command and waits for perf's ack until `deadline` (monotonic);
        False once perf has exited, a stop is requested or the FIFOs are closed."""
        if self.ctl is None or self.ack is None:
            return False
        with contextlib.suppress(BlockingIOError):  # drain a stale ack
            os.read(self.ack, 4096)
        os.write(self.ctl, f"{word}\n".encode())
        while time.monotonic() < deadline:
            if (stop is not None and stop.requested) or not process.running():
                return False
            ready, _, _ = select.select([self.ack], [], [], 0.05)
            if ready:
                with contextlib.suppress(BlockingIOError):
                    if b"ack" in os.read(self.ack, 4096):
                        return True
        return False

    def close(self) -> None:
        """Closes the FIFOs and removes their folder (again: a no-op)."""
        for fd in (self.ctl, self.ack):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.ctl = self.ack = None
        shutil.rmtree(self.dir, ignore_errors=True)
