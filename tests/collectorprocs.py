"""The processes of the eBPF collector tests (test_bpf_collectors.py, test_gc_probe.py): the
collectors built from bpf/, a child read line by line, a collector that writes its JSON to a
file and answers the window signals (conftest's `reap` kills what a failed test left)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

from requirements import unmet

BPF_DIR = Path(__file__).resolve().parent.parent / "bpf"
BUILD = BPF_DIR / "build"  # the collectors' binaries
VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")


def build_collectors() -> None:
    """`make -C bpf`, on a kernel with BTF (else the test is unmet)."""
    if not VMLINUX_BTF.exists():
        unmet(f"kernel without BTF ({VMLINUX_BTF} missing)")
    build = subprocess.run(
        ["make", "-C", str(BPF_DIR)], capture_output=True, text=True, timeout=300, check=False
    )
    assert build.returncode == 0, build.stdout + build.stderr


# What every collector refuses (exit 2): no pid, a pid that is no number or no process, a
# negative duration.
BAD_ARGUMENTS = [
    [],
    ["--pid"],
    ["--pid", "abc"],
    ["--pid", "1", "--duration-s", "-1"],
    ["--pid", "4194303"],  # no such process
]


def refuses_arguments(tool: Path, args: list[str]) -> None:
    """`tool ARGS` exits 2 with one line on stderr, its name first, and nothing on stdout."""
    run = subprocess.run(
        [str(tool), *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert run.returncode == 2
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith(f"{tool.name}: ")


class LineProcess:
    """A child process read line by line, waiting at most `timeout` s for a line or an exit;
    its stderr is kept for stderr() when `keep_stderr`."""

    def __init__(
        self, argv: list[str], stdin: bool = False, timeout: float = 20, keep_stderr: bool = False
    ) -> None:
        self.argv = argv
        self.timeout = timeout
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if keep_stderr else None,
        )
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def next_line(self, timeout: float | None = None) -> str | None:
        """The next line, None at EOF."""
        assert self.proc.stdout is not None
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            assert ready, f"no line from {self.argv} within {timeout} s"
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def readline(self, timeout: float | None = None) -> str:
        """The next line; the process may not end first."""
        line = self.next_line(timeout)
        assert line is not None, f"{self.argv} closed its output (exit {self.proc.poll()})"
        return line

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode()

    def finish(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        rc = self.proc.wait(timeout=self.timeout)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return rc


class WindowCollector(LineProcess):
    """A collector (`argv` but its --pid and --out) of these pids writing its JSON to `out`;
    started once it reports `attached`."""

    def __init__(
        self,
        argv: list[str],
        pids: list[int],
        out: Path,
        *extra: str,
        timeout: float = 20,
        keep_stderr: bool = False,
    ) -> None:
        for pid in pids:
            argv = [*argv, "--pid", str(pid)]
        self.out = out
        super().__init__(
            [*argv, "--out", str(out), *extra], timeout=timeout, keep_stderr=keep_stderr
        )
        self.attached(self.next_line())

    def attached(self, line: str | None) -> None:
        """Checks the collector's first line (None: it ended without one)."""
        assert line == '{"event":"attached"}', (line, self.proc.poll())

    def window(self, sig: signal.Signals) -> int:
        """SIGUSR1 opens the window, SIGUSR2 closes it: returns once the collector has
        acknowledged it (its `window_open`/`window_closed` line), with its window_ns so far."""
        expected = {signal.SIGUSR1: "window_open", signal.SIGUSR2: "window_closed"}[sig]
        self.proc.send_signal(sig)
        event = json.loads(self.readline())
        assert event["event"] == expected, event
        window_ns: int = event["window_ns"]
        return window_ns
