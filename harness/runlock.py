"""One benchmark at a time per machine: an flock'ed file that names its holder."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from types import TracebackType

from harness.errors import HarnessError, LockHeld


class RunLock:
    """Held for the whole of `harness run` / `harness bench`; released by the kernel on exit."""

    def __init__(self, path: Path, command: str) -> None:
        self.path = path
        self.command = command
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LockHeld(
                f"another benchmark is running on this machine ({holder}; lock file "
                f"{self.path}): wait for it to finish, or stop it"
            ) from None
        with contextlib.suppress(OSError):  # a read-only lock file still locks
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": self.command}).encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock
            self.fd = None

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            # Another user's lock file in a sticky directory: flock works on a read-only fd.
            try:
                return os.open(self.path, os.O_RDONLY)
            except OSError as err:
                raise HarnessError(_cannot_open(self.path, err)) from err
        except OSError as err:
            raise HarnessError(_cannot_open(self.path, err)) from err
        with contextlib.suppress(OSError):  # let other users take the lock after us
            os.fchmod(fd, 0o666)
        return fd

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _cannot_open(path: Path, err: OSError) -> str:
    return f"cannot open the lock file {path}: {err.strerror} (set HARNESS_LOCK to another path)"


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode())
        return f"pid {holder['pid']}: {holder['command']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
