"""perf under control (`--control fifo:CTL,ACK`), shared by the `oncpu` and `perfstat`
probes: the two FIFOs in a temporary folder of their own, a command written to one and
perf's `ack` awaited on the other (PerfControl), and a perf process driven through them with
the one clean-up of it, its FIFOs and its files (PerfProcess)."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import tempfile
import time
from pathlib import Path

from harness.base.owner import Owner
from harness.base.stop import StopFlag
from harness.probes.drivers.process import ProbeProcess

PERF_PREFIX = "harness-perf-"
ACK_TIMEOUT_S = 5.0  # for a command after perf has attached
# perf ends with SIGINT's own status after writing its output in full.
SIGINT_EXITS = (0, -signal.SIGINT, 128 + signal.SIGINT)


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


class PerfProcess:
    """perf (`argv`, to which the control option is added) started with FIFOs of its own,
    named after the harness (a later one removes those of one that was killed), and the
    `scratch` files it writes that go with it."""

    def __init__(self, argv: list[str], scratch: tuple[Path, ...]) -> None:
        """Nothing is left behind when perf cannot be started (OSError)."""
        self.scratch = scratch
        self.control = PerfControl(perf_prefix(Owner.current().token))
        try:
            self.process: ProbeProcess | None = ProbeProcess(
                [*argv, "--control", self.control.option]
            )
        except OSError:
            self.close()
            raise

    def command(
        self, word: str, deadline: float | None = None, stop: StopFlag | None = None
    ) -> bool:
        """Writes a control command and waits for perf's ack until `deadline` (monotonic;
        default ACK_TIMEOUT_S from now); False once perf is gone."""
        if self.process is None:
            return False
        end = deadline if deadline is not None else time.monotonic() + ACK_TIMEOUT_S
        return self.control.command(word, self.process, end, stop)

    def stderr_lines(self) -> list[str]:
        return self.process.stderr_lines() if self.process is not None else []

    def interrupt(self) -> None:
        """SIGINT: perf writes its output and exits."""
        if self.process is not None:
            self.process.send(signal.SIGINT)

    def close(self) -> None:
        """Closes and removes its FIFOs and removes its scratch files (again: a no-op)."""
        self.control.close()
        for path in self.scratch:
            path.unlink(missing_ok=True)

    def kill(self) -> None:
        """Ends perf if it still runs, then `close`."""
        if self.process is not None:
            self.process.kill()
            self.process = None
        self.close()
