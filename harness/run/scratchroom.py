"""Before the lock and the run directory: every folder that will hold a plan's scratch files
exists (the default one, <results>/scratch, may be made), takes new files, and has room for
them on its filesystem, with a margin, and for the run directory when it shares it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import BadInput
from harness.run.memlimit import human
from harness.run.scratch import File, plan_files

if TYPE_CHECKING:
    from harness.run.plan import Plan

MIB = 1 << 20
MARGIN_SHARE = 0.05  # of the scratch files: the filesystem's own bookkeeping, other writers
MARGIN_MIN = 16 * MIB  # ...at least, on a filesystem of 256 MiB or more
MARGIN_FS_SHARE = 1 / 16  # the least margin on a smaller one (a test's tmpfs)


@dataclass
class _Filesystem:
    where: Path  # the first scratch folder on it, for the message
    setting: str  # how to choose another folder
    total: int
    free: int
    files: int = 0  # the most any one plan keeps there at once (each run removes its own)
    run: int = 0  # the run directories' estimate, when they go there too
    per_plan: dict[int, int] = field(default_factory=dict)


def margin(files_bytes: int, fs_bytes: int) -> int:
    return max(int(files_bytes * MARGIN_SHARE), min(MARGIN_MIN, int(fs_bytes * MARGIN_FS_SHARE)))


def check_scratch(plans: Sequence[Plan], out_dir: Path, run_bytes: int) -> None:
    """BadInput (one line: the folder, the need and the free space) unless every scratch
    folder of the plans can take its files. run_bytes: what the runs write into out_dir."""
    filesystems: dict[int, _Filesystem] = {}
    for index, plan in enumerate(plans):
        for file in plan_files(plan):
            usable = _usable_dir(file, plan)
            stat = os.statvfs(usable)
            device = os.stat(usable).st_dev
            if device not in filesystems:
                filesystems[device] = _Filesystem(
                    where=file.dir,
                    setting=_setting(plan),
                    total=stat.f_blocks * stat.f_frsize,
                    free=stat.f_bavail * stat.f_frsize,
                )
            room = filesystems[device]
            room.per_plan[index] = room.per_plan.get(index, 0) + file.size_bytes
    if not filesystems:
        return
    out_device = _device(out_dir)
    for device, room in filesystems.items():
        room.files = max(room.per_plan.values())
        room.run = run_bytes if device == out_device else 0
        kept = margin(room.files, room.total)
        need = room.files + kept + room.run
        if room.free < need:
            run = f" + {human(room.run)} for the run directory" if room.run else ""
            raise BadInput(
                f"not enough room for the scratch files in {room.where}: {human(room.free)} "
                f"free on its filesystem, the run needs about {human(need)} there "
                f"({human(room.files)} of scratch files + {human(kept)} margin{run}); free some "
                f"space or {room.setting}"
            )


def _setting(plan: Plan) -> str:
    declared = plan.suite.scratch
    if declared is None or declared.dir_param is None:
        return "set HARNESS_RESULTS to another folder"
    return f"choose another folder with --param {declared.dir_param}=DIR"


def _usable_dir(file: File, plan: Plan) -> Path:
    """The folder to test and measure: the scratch folder itself, or for the default one the
    nearest folder that exists (the rest is made). BadInput if it cannot take files."""
    what = f"scratch folder {file.dir} (suite '{plan.suite.name}')"
    probe = file.dir
    if file.default_dir:
        while not exists(probe) and probe.parent != probe:
            probe = probe.parent
    elif not exists(probe):
        raise BadInput(f"{what} does not exist: create it or choose another")
    if not probe.is_dir():
        raise BadInput(f"{what}: {probe} is not a directory")
    try:  # access(2) says yes to root on a read-only filesystem: try it
        fd, name = tempfile.mkstemp(prefix=".harness-scratch-check-", dir=probe)
    except OSError as err:
        raise BadInput(f"{what}: cannot write in {probe}: {err.strerror or err}") from err
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return probe


def _device(path: Path) -> int | None:
    probe = path
    while not exists(probe) and probe.parent != probe:
        probe = probe.parent
    try:
        return os.stat(probe).st_dev
    except OSError:
        return None


def exists(path: Path) -> bool:
    """Whether `path` is there, also when it cannot be looked into (then writing fails)."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True
