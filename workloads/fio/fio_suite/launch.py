"""fio as the wrapper runs it: started stopped (its pid known before any I/O, the pid already
fio's), dying with the wrapper, continued at the gate, snapshotted with SIGUSR1 at the window's
edges."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from fio_suite import json_plus

PR_SET_PDEATHSIG = 1
PTRACE_TRACEME = 0
PTRACE_CONT = 7
PTRACE_DETACH = 17
TRACEME_FAILED = 126  # the child's exit code when the kernel refuses PTRACE_TRACEME
POLL_S = 0.01


class RunError(Exception):
    """Exit 1: the run failed; the message says why."""


def _ptrace(request: int, pid: int, data: int = 0) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    args = (ctypes.c_int(request), ctypes.c_int(pid), ctypes.c_void_p(), ctypes.c_void_p(data))
    if libc.ptrace(*args) == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"ptrace: {os.strerror(err)}")


def _traced_exec(parent: int) -> None:
    """In the child, before exec: SIGKILL when the wrapper dies (kept across exec, as fio is
    not set-uid), and traced by the wrapper, so that the kernel stops it with SIGTRAP just
    after the exec, as fio, before fio runs any code of its own."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the wrapper died before prctl
        os._exit(1)
    try:
        _ptrace(PTRACE_TRACEME, 0)
    except OSError:
        os._exit(TRACEME_FAILED)


def fio_command(job_file: Path, output: Path) -> list[str]:
    return ["fio", "--output-format=json+", f"--output={output}", "--eta=never", str(job_file)]


class Fio:
    """One fio process, its status output in `output`, its stderr in `stderr_path`."""

    def __init__(self, argv: Sequence[str], cwd: Path, output: Path, stderr_path: Path) -> None:
        self.output = output
        self.stderr_path = stderr_path
        parent = os.getpid()
        with stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=err,  # fio's own notes; our stdout carries only events
                stderr=err,
                preexec_fn=lambda: _traced_exec(parent),
            )
        self._wait_stopped()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _wait_stopped(self) -> None:
        """Wait for the SIGTRAP stop after the exec, then detach, leaving fio stopped (by
        SIGSTOP) and untraced until go()."""
        while True:
            status = self._wait_stop()
            if os.WSTOPSIG(status) == signal.SIGTRAP:
                break
            _ptrace(PTRACE_CONT, self.pid, os.WSTOPSIG(status))  # a signal on its way: deliver it
        _ptrace(PTRACE_DETACH, self.pid, signal.SIGSTOP)
        if os.WSTOPSIG(self._wait_stop()) != signal.SIGSTOP:
            self.kill()
            raise RunError("fio did not stay stopped after its start")

    def _wait_stop(self) -> int:
        """The child's next stop's wait status; RunError if it exits instead."""
        _, status = os.waitpid(self.pid, os.WUNTRACED)
        if os.WIFSTOPPED(status):
            return status
        self.proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code == TRACEME_FAILED:
            raise RunError(
                "cannot start fio stopped: PTRACE_TRACEME refused (kernel.yama.ptrace_scope 3?)"
            )
        raise RunError(f"fio exited before it started (status {status})")

    def go(self, timeout_s: float) -> None:
        """Continue fio, and wait until it handles SIGUSR1 (fio installs its handlers as it
        starts its jobs; before that SIGUSR1 would kill it)."""
        os.kill(self.pid, signal.SIGCONT)
        deadline = time.monotonic() + timeout_s
        while not self.caught_signals() & (1 << (signal.SIGUSR1 - 1)):
            if not self.alive():
                raise RunError(self.failure("fio exited as it started"))
            if time.monotonic() > deadline:
                raise RunError(f"fio did not start its jobs within {timeout_s:g} s")
            time.sleep(POLL_S / 10)

    def caught_signals(self) -> int:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16)
        return 0

    def cpu_ns(self) -> int | None:
        """fio's CPU time so far, user + system of every thread (its process CPU clock)."""
        clock = ((~self.pid) << 3) | 2  # the kernel's CPUCLOCK for a process (CPUCLOCK_SCHED)
        try:
            return time.clock_gettime_ns(clock)
        except OSError:
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def sleep_until(self, deadline: float) -> None:
        """Wait until `deadline` (monotonic); RunError if fio exits first."""
        while (left := deadline - time.monotonic()) > 0:
            if not self.alive():
                raise RunError(self.failure("fio exited during the run"))
            time.sleep(min(left, 0.05))

    def snapshot(self, count: int, timeout_s: float) -> json_plus.Snapshot:
        """Ask fio for its status (SIGUSR1) and wait for the `count`-th document."""
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.monotonic() + timeout_s
        while True:
            documents = self.documents()
            if len(documents) >= count:
                return json_plus.snapshot(documents[count - 1])
            if not self.alive():
                raise RunError(self.failure("fio exited before writing its status"))
            if time.monotonic() > deadline:
                raise RunError(f"fio wrote no status within {timeout_s:g} s of SIGUSR1")
            time.sleep(POLL_S)

    def documents(self) -> list[dict[str, object]]:
        try:
            text = self.output.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return json_plus.split_documents(text)

    def stop(self, grace_s: float) -> None:
        """SIGINT (fio ends its jobs and writes its final status), then SIGKILL."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)
                self.proc.kill()
        self.proc.wait()

    def stderr_lines(self) -> list[str]:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()]

    def failure(self, what: str) -> str:
        """`what`, with fio's exit code and its last messages."""
        code = self.proc.poll()
        lines = self.stderr_lines()[-5:]
        said = f": {' | '.join(lines)}" if lines else ""
        return f"{what} (exit code {code}){said}"
