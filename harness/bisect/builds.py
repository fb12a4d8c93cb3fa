"""One commit's build of the suite: its worktree, the suite's own `build` step run in the
suite's folder there, with the build caches shared between the worktrees of a bisection.

Rust: every worktree builds into one CARGO_TARGET_DIR per suite under the bisection's cache/,
so a commit rebuilds only what changed (Go's build cache is shared already, per user). The
binaries the suite runs are then copied out of that shared folder to where its suite.toml
says they are in the worktree: the next commit's build overwrites the shared ones."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.base.stop import StopFlag
from harness.bisect.target import Target
from harness.bisect.worktrees import Workspace
from harness.errors import BadInput
from harness.suites import Suite, load_suite

POLL_S = 0.2


@dataclass(frozen=True)
class Build:
    commit: str
    suite: Suite | None  # None: it did not build
    reason: str | None = None  # why not
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.suite is not None


class BuildInterrupted(Exception):
    pass


def build(workspace: Workspace, target: Target, commit: str, stop: StopFlag) -> Build:
    """The suite built at `commit` in a worktree of its own; a Build without a suite (and
    why) when the commit has no such suite or its build fails."""
    tree = workspace.add(commit)
    folder = target.folder_in(tree)
    manifest = folder / "suite.toml"
    if not manifest.is_file():
        return Build(commit, None, f"no {target.manifest} at this commit")
    try:
        suite = load_suite(manifest)
    except BadInput as err:
        return Build(commit, None, f"its suite.toml: {err}")
    log = workspace.logs / f"build-{commit[:12]}.log"
    cargo_target = workspace.cache / f"cargo-target-{suite.name}"
    if suite.build is not None:
        env = {**os.environ, "CARGO_TARGET_DIR": str(cargo_target)}
        with log.open("w") as out:
            proc = subprocess.Popen(
                suite.build,
                shell=True,
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            code = _wait(proc, stop)
        if code != 0:
            return Build(commit, None, f"its build exited with code {code} (log: {log})", log)
    _copy_out(suite, folder, cargo_target)
    if not suite.built:
        return Build(commit, None, f"its build made no {suite.binary}", log)
    return Build(commit, dataclasses.replace(suite), None, log)


def _wait(proc: subprocess.Popen[bytes], stop: StopFlag) -> int:
    """The build's exit code; its whole process group is killed on a stop."""
    while True:
        try:
            return proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if stop.requested:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                proc.wait()
                raise BuildInterrupted from None


def _copy_out(suite: Suite, folder: Path, cargo_target: Path) -> None:
    """The files beside the binary in the shared cargo target folder, copied to where the
    suite's binary is in the worktree (its `target/...` path), when the build left them
    there rather than in the worktree."""
    if suite.built or not cargo_target.is_dir():
        return
    try:
        relative = suite.binary.relative_to(folder)
    except ValueError:
        return
    parts = relative.parts
    if "target" not in parts:
        return
    inner = Path(*parts[parts.index("target") + 1 :])
    source_dir = (cargo_target / inner).parent
    if not (cargo_target / inner).is_file():
        return
    suite.binary.parent.mkdir(parents=True, exist_ok=True)
    for entry in source_dir.iterdir():
        if entry.is_file() and os.access(entry, os.X_OK):
            shutil.copy2(entry, suite.binary.parent / entry.name)
