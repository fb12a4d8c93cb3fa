"""One repeat of `<bin> run`: spawn it in its own process group, follow the JSON-lines protocol,
enforce the deadline, and leave no process of it behind."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import selectors
import signal
import subprocess
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from harness.base.stop import StopFlag
from harness.run import perfmaps
from harness.run.confine import RepeatBox

KILL_GRACE_S = 2.0  # between SIGTERM and SIGKILL
EXIT_GRACE_S = 1.0  # how long a pipe may stay open after the workload itself exited
POLL_S = 0.1
STDERR_TAIL_LINES = 20
_PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Outcome:
    result: dict[str, Any] | None = None
    exit_code: int | None = None
    reason: str | None = None  # why the repeat failed; None when it succeeded
    stderr_tail: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    interrupted: bool = False
    # The ready event's pids that are the workload's own processes (perfmaps.started).
    processes: list[perfmaps.Started] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result is not None and self.reason is None and not self.interrupted

    @property
    def error(self) -> str:
        """One line: why the repeat failed, and the workload's last line on stderr."""
        last = next((line.strip() for line in reversed(self.stderr_tail) if line.strip()), None)
        return f"{self.reason}; stderr: {last}" if last else str(self.reason)


class RepeatHooks(Protocol):
    """Told of the workload's events as they arrive; on_ready returns before the gate opens,
    so that probes are attached before the warm-up."""

    def on_ready(self, pids: list[int]) -> None: ...

    def on_measure_start(self) -> None: ...

    def on_measure_end(self) -> None: ...


class ProtocolViolation(Exception):
    pass


class _Protocol:
    """ready -> measure_start -> measure_end -> result, in this order, each once."""

    ORDER = ("ready", "measure_start", "measure_end", "result")

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.result: dict[str, Any] | None = None

    def feed(self, event: dict[str, Any]) -> None:
        name = event.get("event")
        if name not in self.ORDER:
            return  # other events are for humans or later contract versions
        expected = self.ORDER[len(self.seen)] if len(self.seen) < len(self.ORDER) else None
        if name != expected:
            after = f"after '{self.seen[-1]}'" if self.seen else "first"
            want = f"expected '{expected}'" if expected else "nothing may follow 'result'"
            raise ProtocolViolation(f"event '{name}' {after}: {want}")
        self.seen.append(str(name))
        if name == "result":
            self.result = event

    @property
    def stage(self) -> str:
        return f"after '{self.seen[-1]}'" if self.seen else "before 'ready'"


def become_subreaper() -> None:
    """Adopt orphaned descendants so that a killed workload's children can be waited for.

    Without this, a server child orphaned by the workload's death is re-parented to pid 1,
    which in containers often never reaps it.
    """
    with contextlib.suppress(OSError, AttributeError):  # not Linux: best effort
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_repeat(
    binary: Path,
    cwd: Path,
    args: Sequence[str],
    deadline_s: float,
    stop: StopFlag,
    hooks: RepeatHooks | None = None,
    box: RepeatBox | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    """Run `<binary> run <args> --gate` once, in `box` if given (its cgroup and memory
    limit), with `env` added to the environment; never raises for a misbehaving workload."""
    become_subreaper()
    started = time.monotonic()
    argv = [str(binary), "run", *args, "--gate"]
    added = {**(box.env if box else {}), **(env or {})}
    try:
        proc = subprocess.Popen(
            box.command(argv) if box else argv,
            cwd=cwd,
            env={**os.environ, **added} if added else None,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as err:
        return Outcome(reason=f"could not start {binary}: {err.strerror}")
    session = _Session(proc, hooks)
    outcome = Outcome()
    try:
        outcome.reason = session.follow(started + deadline_s, deadline_s, stop)
        outcome.interrupted = outcome.reason == _INTERRUPTED
    finally:
        session.end_group()
        if box is not None:
            box.end()
    session.drain()
    protocol = session.protocol
    outcome.exit_code = proc.returncode
    outcome.processes = session.processes
    outcome.stderr_tail = list(session.stderr_tail)
    outcome.elapsed_s = time.monotonic() - started
    if outcome.interrupted:
        outcome.reason = None
    elif outcome.reason is None:
        if proc.returncode != 0:
            outcome.reason = _exit_reason(proc.returncode, protocol.stage)
        elif protocol.result is None:
            outcome.reason = f"exited with code 0 without a result ({protocol.stage})"
    oom = box.oom_reason() if box and not outcome.interrupted else None
    if oom:
        outcome.reason = f"{oom}: {outcome.reason}" if outcome.reason else oom
    outcome.result = protocol.result if outcome.reason is None else None
    return outcome


_INTERRUPTED = "interrupted"


def _exit_reason(code: int, stage: str) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name} ({stage})"
    return f"exited with code {code} ({stage})"


class _Session:
    def __init__(self, proc: subprocess.Popen[bytes], hooks: RepeatHooks | None) -> None:
        self.proc = proc
        self.hooks = hooks
        self.pgid = proc.pid  # start_new_session: the workload leads its own group
        self.protocol = _Protocol()
        self.processes: list[perfmaps.Started] = []
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.selector = selectors.DefaultSelector()
        # A line's bytes so far, in chunks: joined once its end arrives, so that a long
        # line costs time in proportion to its length (concatenating per read is quadratic).
        self.partial: dict[int, list[bytes]] = {}
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)
            self.selector.register(stream, selectors.EVENT_READ)
            self.partial[stream.fileno()] = []

    def follow(self, deadline: float, deadline_s: float, stop: StopFlag) -> str | None:
        """Read events until the workload exits; a failure reason, _INTERRUPTED, or None."""
        exited_at: float | None = None
        while True:
            if not self.selector.get_map():
                # Both pipes closed: the workload is exiting; wait for it, not for a timeout.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=POLL_S)
            for line in self._read_stdout_lines(POLL_S):
                event = _parse_event(line)
                if event is None:
                    continue
                try:
                    self.protocol.feed(event)
                except ProtocolViolation as err:
                    return f"protocol violation: {err}"
                self._on_event(event)
            now = time.monotonic()
            if self.proc.poll() is not None:
                exited_at = exited_at or now
                # A pipe still open after the exit belongs to a leftover child: end_group().
                if not self.selector.get_map() or now - exited_at > EXIT_GRACE_S:
                    return None
            if stop.requested:
                return _INTERRUPTED
            if now > deadline:
                return f"timed out after {deadline_s:g} s ({self.protocol.stage})"

    def _on_event(self, event: dict[str, Any]) -> None:
        """An event the protocol accepted (or ignored): tell the hooks, open the gate."""
        name = event["event"]
        if name == "ready":
            self.processes = perfmaps.started(_pids(event), self.pgid)
            if self.hooks is not None:
                self.hooks.on_ready(_pids(event))
            self._open_gate()
        elif self.hooks is not None and name == "measure_start":
            self.hooks.on_measure_start()
        elif self.hooks is not None and name == "measure_end":
            self.hooks.on_measure_end()

    def _open_gate(self) -> None:
        """Let the workload start its warm-up (probes are attached by now)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it died before reading the gate: its exit code tells why

    def _read_stdout_lines(self, timeout: float) -> Iterator[str]:
        for key, _ in self.selector.select(timeout):
            stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
            for line in self._read_lines(stream):
                if stream is self.proc.stdout:
                    yield line
                else:
                    self.stderr_tail.append(line)

    def _read_lines(self, stream: IO[bytes]) -> list[str]:
        fd = stream.fileno()
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return []
        pending = self.partial[fd]
        if not chunk:
            self.selector.unregister(stream)
            rest, self.partial[fd] = b"".join(pending), []
            return [rest.decode(errors="replace")] if rest else []
        if b"\n" not in chunk:
            pending.append(chunk)
            return []
        first, *lines, tail = chunk.split(b"\n")
        lines.insert(0, b"".join([*pending, first]))
        self.partial[fd] = [tail] if tail else []
        return [line.decode(errors="replace").rstrip("\r") for line in lines]

    def drain(self) -> None:
        """Collect what is left in the pipes once every writer is gone."""
        end = time.monotonic() + EXIT_GRACE_S
        while self.selector.get_map() and time.monotonic() < end:
            for line in self._read_stdout_lines(POLL_S):
                event = _parse_event(line)
                if event is not None:
                    try:
                        self.protocol.feed(event)
                    except ProtocolViolation:
                        break
        for key in list(self.selector.get_map().values()):
            self.selector.unregister(key.fileobj)
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()

    def end_group(self) -> None:
        """TERM the whole process group, KILL it after a grace period, and reap every member."""
        self._reap()
        if not self._group_alive():
            return
        self._signal_group(signal.SIGTERM)
        if not self._wait_group_gone(KILL_GRACE_S):
            self._signal_group(signal.SIGKILL)
            self._wait_group_gone(KILL_GRACE_S)

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def _wait_group_gone(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while True:
            self._reap()
            if not self._group_alive():
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.02)

    def _reap(self) -> None:
        if self.proc.poll() is None:
            return  # group members only become our children once the leader is gone
        while True:
            try:
                pid, _ = os.waitpid(-self.pgid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _pids(event: dict[str, Any]) -> list[int]:
    """The ready event's `pids`, the measured client first; non-integers are dropped."""
    pids = event.get("pids")
    if not isinstance(pids, list):
        return []
    return [p for p in pids if isinstance(p, int) and not isinstance(p, bool) and p > 0]


def _parse_event(line: str) -> dict[str, Any] | None:
    """A JSON object with an `event` key, else None (other stdout lines are ignored)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and "event" in value else None
