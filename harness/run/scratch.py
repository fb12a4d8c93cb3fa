"""Scratch files: a suite whose suite.toml has a [scratch] table gets, in each repeat of `run`,
a file written in full by the harness (not sparse: reads hit real blocks), named by the
environment variable HARNESS_SCRATCH_FILE. One file per distinct (folder, size) of the run,
`<dir>/harness-scratch-<run_id>/data-<size>m`, made before the first repeat that needs it
and reused; the folder goes after the run, also after Ctrl-C or a failure, and the recovery
of an abandoned run removes it (remove_recorded)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.base.stop import StopFlag
from harness.base.writes import WriteFailed
from harness.errors import BadInput
from harness.paths import results_root

if TYPE_CHECKING:  # run.json's record names the files, and the plan imports the probes
    from harness.run.plan import Plan

ENV = "HARNESS_SCRATCH_FILE"
FOLDER_PREFIX = "harness-scratch-"
MIB = 1 << 20
CHUNK = MIB  # written at a time; the stop flag is polled between chunks
_A = {"int": "an int", "string": "a string"}


@dataclass(frozen=True)
class File:
    """A scratch file a plan needs: its folder (absolute) and its size."""

    dir: Path
    size_mb: int
    default_dir: bool  # the harness's own folder (<results>/scratch), made when missing

    @property
    def size_bytes(self) -> int:
        return self.size_mb * MIB

    def folder(self, run_id: str) -> Path:
        return self.dir / f"{FOLDER_PREFIX}{run_id}"

    def path(self, run_id: str) -> Path:
        return self.folder(run_id) / f"data-{self.size_mb}m"


def default_dir() -> Path:
    """Where scratch files go when the suite's dir parameter is empty: <results>/scratch."""
    return Path(os.path.abspath(results_root() / "scratch"))


def cell_files(plan: Plan) -> list[File | None]:
    """Each cell's scratch file (None: the suite needs none); BadInput for a [scratch] table
    that does not match the suite's describe or a cell's size below 1 MiB."""
    declared = plan.suite.scratch
    if declared is None:
        return [None] * len(plan.cells)
    specs = plan.description.params
    _check_param(plan, "size_param", declared.size_param, "int")
    if declared.dir_param is not None:
        _check_param(plan, "dir_param", declared.dir_param, "string")
    files: list[File | None] = []
    for cell in plan.cells:
        values = {**{name: spec.default for name, spec in specs.items()}, **cell.params}
        size = values[declared.size_param]
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise BadInput(
                f"cell '{cell.id}': {declared.size_param} is the size of its scratch file in "
                f"MiB and must be at least 1, got {size!r}"
            )
        folder = str(values[declared.dir_param]) if declared.dir_param is not None else ""
        if folder:
            files.append(File(Path(os.path.abspath(folder)), size, default_dir=False))
        else:
            files.append(File(default_dir(), size, default_dir=True))
    return files


def plan_files(plan: Plan) -> list[File]:
    """The distinct scratch files of a plan, in the order of its cells."""
    return list(dict.fromkeys(f for f in cell_files(plan) if f is not None))


def config(plan: Plan, run_id: str) -> dict[str, Any]:
    """run.json's `config.scratch`, for a plan that has scratch files; else nothing."""
    files = plan_files(plan)
    if not files:
        return {}
    return {
        "scratch": [
            {"dir": str(f.dir), "size_mb": f.size_mb, "path": str(f.path(run_id))} for f in files
        ]
    }


def _check_param(plan: Plan, key: str, name: str, kind: str) -> None:
    spec = plan.description.params.get(name)
    if spec is None or spec.type != kind:
        valid = [n for n, s in plan.description.params.items() if s.type == kind]
        raise BadInput(
            f"{plan.suite.manifest}: key 'scratch.{key}': '{name}' is not {_A[kind]} parameter of "
            f"the suite's describe ({kind} parameters: {', '.join(valid) or 'none'})"
        )


class Scratch:
    """A run's scratch files: made on demand, checked before every repeat (a workload that
    removed or truncated its file gets a new one), removed at the end."""

    def __init__(self, files: Sequence[File | None], run_id: str, say: Callable[[str], None]):
        self.files = list(files)
        self.run_id = run_id
        self.say = say

    @classmethod
    def of(cls, plan: Plan, run_id: str, say: Callable[[str], None]) -> Scratch:
        return cls(cell_files(plan), run_id, say)

    def prepare(self, cell_index: int, stop: StopFlag) -> dict[str, str] | None:
        """The environment of the cell's repeat: its scratch file, written first if it is not
        there whole; None if a stop signal came while it was written (nothing is left of it).
        WriteFailed (one line) if it cannot be written."""
        file = self.files[cell_index]
        if file is None:
            return {}
        path = file.path(self.run_id)
        if _whole(path, file.size_bytes):
            return {ENV: str(path)}
        try:
            if file.default_dir:
                file.dir.mkdir(parents=True, exist_ok=True)
            file.folder(self.run_id).mkdir(exist_ok=True)
        except OSError as err:
            raise _failed(path, file, err) from err
        self.say(f"writing scratch file {path} ({file.size_mb} MiB)")
        if not write_file(path, file.size_bytes, stop, file):
            return None
        return {ENV: str(path)}

    def remove(self) -> None:
        """Every scratch folder of the run, and the default folder if it is left empty."""
        for file in dict.fromkeys(f for f in self.files if f is not None):
            shutil.rmtree(file.folder(self.run_id), ignore_errors=True)
            if file.default_dir:
                with contextlib.suppress(OSError):
                    file.dir.rmdir()  # only if empty: another run's folder stays


def write_file(path: Path, size: int, stop: StopFlag, file: File) -> bool:
    """`size` bytes of a non-zero pattern at `path`, allocated, written and synced; False
    (and no file) if `stop` was raised meanwhile; WriteFailed (and no file) on an error."""
    block = memoryview(os.urandom(CHUNK))  # not zeros: no filesystem may skip the blocks
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise _failed(path, file, err) from err
    done = False
    try:
        _allocate(fd, size)  # a full disk shows here at once, before anything is written
        written = 0
        while written < size:
            if stop.requested:
                return False
            written += os.write(fd, block[: min(CHUNK, size - written)])
        os.fsync(fd)
        with contextlib.suppress(OSError):  # the workload reads the disk, not this cache
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        done = True
        return True
    except OSError as err:
        raise _failed(path, file, err) from err
    finally:
        os.close(fd)
        if not done:
            with contextlib.suppress(OSError):
                path.unlink()


def _allocate(fd: int, size: int) -> None:
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as err:
        if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise  # not supported by the filesystem: the writes find a full disk instead


def _whole(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except OSError:
        return False


def _failed(path: Path, file: File, err: OSError) -> WriteFailed:
    return WriteFailed(
        f"cannot write the scratch file {path} ({file.size_mb} MiB): {err.strerror or err}"
    )


def remove_recorded(entries: Iterable[str], run_id: str) -> int:
    """The scratch folders of run `run_id` at the recorded file paths (run.json's
    config.scratch), left by a harness that died; how many there were. Only folders named
    for the run are removed."""
    removed = 0
    for entry in dict.fromkeys(Path(p).parent for p in entries):
        if entry.name == f"{FOLDER_PREFIX}{run_id}" and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed
