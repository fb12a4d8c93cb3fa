"""One commit's build of the suite in a slot: the commit checked out in the slot's worktree
(worktrees.py), the suite's own `build` step run in the suite's folder there.

A slot's path stays the same from one commit to the next and its checkout rewrites only the
files that changed, so a build keyed on paths and modification times redoes only what
changed: Rust builds into the slot's own CARGO_TARGET_DIR under the bisection's cache/ (a
cargo fingerprint holds the source's path and time); Go's build cache is per user and keyed
on content and the package's folder, which the slot keeps. A slot's first build starts from
a copy of a Rust target folder already built: another slot's, else the one in the user's
checkout of the suite (only read), so that the dependencies compile at most once. The
binaries the suite runs are then copied out of the slot's target folder to where its
suite.toml says they are in the worktree."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.base.stop import StopFlag
from harness.bisect.target import Target
from harness.bisect.worktrees import Workspace
from harness.errors import BadInput
from harness.suites import Suite, load_suite

POLL_S = 0.2
CARGO_TAG = "CACHEDIR.TAG"  # in every cargo target folder


@dataclass(frozen=True)
class Build:
    commit: str
    suite: Suite | None  # None: it did not build
    reason: str | None = None  # why not
    log: Path | None = None
    seconds: float | None = None  # the checkout and the build

    @property
    def ok(self) -> bool:
        return self.suite is not None


class BuildInterrupted(Exception):
    pass


def build(workspace: Workspace, target: Target, commit: str, stop: StopFlag, slot: str) -> Build:
    """The suite built at `commit` in slot `slot` (which the commit's build replaces there); a
    Build without a suite (and why) when the commit has no such suite or its build fails."""
    started = time.monotonic()
    for copied in workspace.copied.pop(slot, []):
        copied.unlink(missing_ok=True)  # the last commit's binaries: never taken for this one's
    tree = workspace.checkout(slot, commit)
    folder = target.folder_in(tree)
    manifest = folder / "suite.toml"
    if not manifest.is_file():
        return Build(commit, None, f"no {target.manifest} at this commit")
    try:
        suite = load_suite(manifest)
    except BadInput as err:
        return Build(commit, None, f"its suite.toml: {err}")
    log = workspace.logs / f"build-{commit[:12]}.log"
    cargo_target = workspace.cache / f"cargo-target-{slot}"
    if suite.build is not None:
        with log.open("w") as out:
            if not cargo_target.exists():
                _seed(workspace, target, cargo_target, out, stop)
            env = {**os.environ, "CARGO_TARGET_DIR": str(cargo_target)}
            out.write(f"$ {suite.build}\n")
            out.flush()
            code = _run(suite.build, folder, env, out, stop)
        if code != 0:
            return Build(commit, None, f"its build exited with code {code} (log: {log})", log)
    workspace.copied[slot] = _copy_out(suite, folder, cargo_target)
    if not suite.built:
        return Build(commit, None, f"its build made no {suite.binary}", log)
    return Build(commit, dataclasses.replace(suite), None, log, time.monotonic() - started)


def _seed(
    workspace: Workspace, target: Target, cargo_target: Path, out: IO[str], stop: StopFlag
) -> None:
    """The slot's target folder, a copy of a Rust target folder built already: another slot's
    (the newest), else the suite's `target/` in the user's checkout; none when there is none.
    A copy that fails is removed: the build then starts from nothing."""
    others = sorted(
        (p for p in workspace.cache.glob("cargo-target-*") if p.is_dir()),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    own = target.folder_in(target.repo) / "target"
    mine = own.is_dir() and not own.is_symlink() and (own / CARGO_TAG).is_file()
    sources = [*others, *([own] if mine else [])]
    if not sources:
        return
    source = sources[0]
    if source == own and _has_symlink(own):
        # The build would write through it, as root, outside the bisection's folder.
        out.write(f"# not copied: {own} holds a symbolic link\n")
        return
    out.write(f"$ cp -a {source} {cargo_target}  # a target folder built already\n")
    out.flush()
    copy = ["cp", "-a", "--reflink=auto", "--", str(source), str(cargo_target)]
    try:
        code = _run(copy, workspace.cache, dict(os.environ), out, stop)
    finally:
        if stop.requested:
            shutil.rmtree(cargo_target, ignore_errors=True)
    if code != 0:
        shutil.rmtree(cargo_target, ignore_errors=True)


def _has_symlink(folder: Path) -> bool:
    for root, dirs, files in os.walk(folder):
        if any(os.path.islink(os.path.join(root, name)) for name in (*dirs, *files)):
            return True
    return False


def _run(
    command: str | list[str], cwd: Path, env: dict[str, str], out: IO[str], stop: StopFlag
) -> int:
    proc = subprocess.Popen(
        command,
        shell=isinstance(command, str),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return _wait(proc, stop)


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


def _copy_out(suite: Suite, folder: Path, cargo_target: Path) -> list[Path]:
    """The executables beside the binary in the slot's cargo target folder, copied to where
    the suite's binary is in the worktree (its `target/...` path), when the build left them
    there rather than in the worktree. Returns the copies."""
    if suite.built or not cargo_target.is_dir():
        return []
    try:
        relative = suite.binary.relative_to(folder)
    except ValueError:
        return []
    parts = relative.parts
    if "target" not in parts:
        return []
    inner = Path(*parts[parts.index("target") + 1 :])
    source_dir = (cargo_target / inner).parent
    if not (cargo_target / inner).is_file():
        return []
    suite.binary.parent.mkdir(parents=True, exist_ok=True)
    copies = []
    for entry in source_dir.iterdir():
        if entry.is_file() and os.access(entry, os.X_OK):
            copy = suite.binary.parent / entry.name
            shutil.copy2(entry, copy)
            copies.append(copy)
    return copies
