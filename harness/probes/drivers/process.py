"""A probe's child process: its own session, killed if the harness dies, output kept by line."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from harness.base.stop import StopFlag

STDERR_TAIL_LINES = 20
KILL_GRACE_S = 2.0
POLL_S = 0.02


def _with_parent_death_signal(argv: Sequence[str]) -> list[str]:
    """Have the kernel SIGKILL the probe if the harness dies first (a probe whose targets
    are gone keeps its BPF programs loaded until it exits)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


class ProbeProcess:
    """Spawned at once; stdout lines and a tail of stderr are read by two daemon threads."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.lines: list[str] = []
        self.stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        # Its own session: a Ctrl-C on the terminal reaches the harness only, which then
        # stops the probe itself, in order.
        self.proc = subprocess.Popen(
            _with_parent_death_signal(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.readers = [
            _reader(self.proc.stdout, self.lines.append),
            _reader(self.proc.stderr, self.stderr.append),
        ]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_for_line(
        self, matches: Callable[[str], bool], deadline: float, stop: StopFlag | None
    ) -> bool:
        """True once a stdout line matches; False when the probe exits, time runs out or a
        stop is requested."""
        seen = 0
        while True:
            exited = not self.running()
            if exited:
                self.join_readers()  # every line it printed is in
            while seen < len(self.lines):
                if matches(self.lines[seen]):
                    return True
                seen += 1
            if exited or time.monotonic() > deadline or (stop is not None and stop.requested):
                return False
            time.sleep(POLL_S)

    def wait_for_handlers(
        self, signals: Sequence[signal.Signals], deadline: float, stop: StopFlag | None
    ) -> bool:
        """True once the process has handlers for all of `signals` (SigCgt in /proc).

        A probe may announce that it is attached before it installs them, and the default
        action of SIGUSR1 is to terminate.
        """
        wanted = sum(1 << (sig - 1) for sig in signals)
        while True:
            if self.caught_signals() & wanted == wanted:
                return True
            if not self.running() or time.monotonic() > deadline:
                return False
            if stop is not None and stop.requested:
                return False
            time.sleep(POLL_S)

    def caught_signals(self) -> int:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16)
        return 0

    def send(self, sig: signal.Signals) -> None:
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if still running after `timeout` seconds."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.join_readers()
        return code

    def kill(self) -> None:
        """TERM, then KILL after a grace period; reaped either way."""
        if self.running():
            self.send(signal.SIGTERM)
            if self.wait(KILL_GRACE_S) is None:
                self.proc.kill()
        self.proc.wait()
        self.join_readers()

    def join_readers(self) -> None:
        for thread in self.readers:
            thread.join(timeout=KILL_GRACE_S)

    def stderr_lines(self, ignore: Callable[[str], bool] = lambda line: False) -> list[str]:
        return [line for line in self.stderr if line.strip() and not ignore(line)]


def _reader(stream: IO[bytes], sink: Callable[[str], None]) -> threading.Thread:
    def run() -> None:
        with stream:
            for raw in stream:
                sink(raw.decode(errors="replace").rstrip("\r\n"))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
