"""Every file the harness writes goes through here. Atomic writes: a reader sees the old file
or the new one, never half of one; strict JSON. Honest writes: a write error is one line naming
the path and the error (exit 1), and the run directory keeps room to say `failed` even on a
full disk."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

RESERVE_NAME = ".harness-reserve"
RESERVE_BYTES = 256 * 1024  # room for the failed run.json: freed just before it is written


class WriteFailed(HarnessError):
    """A file of the run could not be written: disk full, folder gone, read-only..."""


def write_failed(err: OSError, path: Path | None = None) -> WriteFailed:
    """`cannot write PATH: the error`, the path from the error where it names one."""
    where = path if path is not None else (err.filename or "a file")
    return WriteFailed(f"cannot write {where}: {err.strerror or err}")


def make_reserve(run_dir: Path) -> None:
    """Claim RESERVE_BYTES of the run directory's filesystem (released by release_reserve)."""
    path = run_dir / RESERVE_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as err:
        raise write_failed(err, path) from err
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    except OSError as err:
        path.unlink(missing_ok=True)
        raise write_failed(err, path) from err
    finally:
        os.close(fd)


def release_reserve(run_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (run_dir / RESERVE_NAME).unlink()


def overwrite(path: Path, data: str) -> None:
    """The last resort of a full disk, where a new file beside the old one does not fit:
    truncate the old file (its blocks come free) and write the new text in its place."""
    with path.open("w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: Path, data: bytes | str) -> None:
    """Readers (the next repeat, a browser refreshing the report) see the old file or the new
    one, never half of one. Text is written as UTF-8."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    raw = data.encode() if isinstance(data, str) else data
    try:
        with tmp.open("wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:  # named by the file meant, not by its temporary name
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err
    finally:
        with contextlib.suppress(OSError):  # a second error must not hide the first
            tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    write_atomic(path, dumps(doc) + "\n")


def dumps(doc: Mapping[str, Any]) -> str:
    """Strict JSON: a NaN or infinity (e.g. the interval of one sample) becomes null."""
    return json.dumps(_finite(doc), indent=2, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
