"""A bisection's builds in slots (harness/bisect/builds.py, worktrees.py): one worktree path a
slot, each commit checked out there after the last; a slot's cargo target folder starts as a
copy of one built already (the user's, only read); the binaries copied out of it never
outlive the build that made them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from bisectrepo import commit, git

from harness.base.stop import StopFlag
from harness.bisect.builds import build
from harness.bisect.target import Target
from harness.bisect.worktrees import Workspace

pytestmark = pytest.mark.unit

# A suite built as cargo builds one: its binary under target/release/, written into
# $CARGO_TARGET_DIR (which the bisection points elsewhere); a commit with NOBIN builds no
# binary but exits 0. Each build appends to `builds` there, as cargo keeps what it built.
SUITE = """name = "app"
description = "a binary under target/, built into CARGO_TARGET_DIR"
binary = "target/release/app"
build = "sh build.sh"
"""
BUILD = """set -e
mkdir -p "$CARGO_TARGET_DIR/release"
echo "$PWD" >> "$CARGO_TARGET_DIR/builds"
rm -f "$CARGO_TARGET_DIR/release/app"
if [ ! -e NOBIN ]; then cp app.sh "$CARGO_TARGET_DIR/release/app"; fi
chmod +x "$CARGO_TARGET_DIR/release/"* 2>/dev/null || true
"""
APP = "#!/bin/sh\necho app\n"


def make(repo: Path) -> list[str]:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "Bench Tester")
    files = {"app/suite.toml": SUITE, "app/build.sh": BUILD, "app/app.sh": APP}
    first = commit(repo, "app", dict(files))
    second = commit(repo, "app: builds no binary", {"app/NOBIN": "x\n"})
    third = commit(repo, "app: builds again", {"app/NOBIN": None})
    return [first, second, third]


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_slot_reuses_its_path_and_target_folder_and_no_stale_binary(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    first, second, third = make(repo)
    # The user's own build of the suite, in their checkout: the slots' first build starts
    # from a copy of it, and it is only read.
    mine = repo / "app" / "target"
    (mine / "release").mkdir(parents=True)
    (mine / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (mine / "builds").write_text("the user's\n")
    before = tree_digest(mine)
    workspace = Workspace(tmp_path / "results" / "bisect", repo)
    target = Target("app", repo, "app")
    stop = StopFlag()

    one = build(workspace, target, first, stop, "candidate")
    assert one.suite is not None and one.suite.built, one.reason
    slot = workspace.worktrees / "candidate"
    assert one.suite.binary == slot / "app" / "target" / "release" / "app"
    assert one.seconds is not None and one.seconds > 0

    # The next commit's build succeeds without a binary: the last commit's copy is gone.
    two = build(workspace, target, second, stop, "candidate")
    assert two.suite is None and two.reason is not None and "made no" in two.reason
    assert not (slot / "app" / "target" / "release" / "app").exists()

    three = build(workspace, target, third, stop, "candidate")
    assert three.suite is not None and three.suite.built, three.reason
    assert git(slot, "rev-parse", "HEAD") == third
    builds = (workspace.cache / "cargo-target-candidate" / "builds").read_text().splitlines()
    assert builds == ["the user's", *[str(slot / "app")] * 3]

    # Another slot starts from this slot's target folder, not the user's.
    other = build(workspace, target, first, stop, "good")
    assert other.suite is not None, other.reason
    builds = (workspace.cache / "cargo-target-good" / "builds").read_text().splitlines()
    assert builds == [
        "the user's",
        *[str(slot / "app")] * 3,
        str(workspace.worktrees / "good" / "app"),
    ]

    assert tree_digest(mine) == before
    assert git(repo, "rev-parse", "HEAD") == third
    assert git(repo, "status", "--porcelain") == "?? app/target/"
    workspace.close()
    assert not workspace.worktrees.exists() and not workspace.cache.exists()
    assert len(git(repo, "worktree", "list").splitlines()) == 1


def test_a_users_target_folder_with_a_symlink_is_not_copied(tmp_path: Path) -> None:
    """The build writes into the copy as root: a link in it could lead outside the folder."""
    repo = tmp_path / "repo"
    first, _, _ = make(repo)
    mine = repo / "app" / "target"
    (mine / "release").mkdir(parents=True)
    (mine / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (mine / "release" / "deps").symlink_to(outside)
    workspace = Workspace(tmp_path / "results" / "bisect", repo)
    one = build(workspace, Target("app", repo, "app"), first, StopFlag(), "good")
    assert one.suite is not None, one.reason
    copy = workspace.cache / "cargo-target-good"
    assert not (copy / "CACHEDIR.TAG").exists()  # built from nothing
    assert (copy / "builds").read_text().splitlines() == [str(workspace.worktrees / "good" / "app")]
    assert one.log is not None and "holds a symbolic link" in one.log.read_text()
    assert list(outside.iterdir()) == []
    workspace.close()
