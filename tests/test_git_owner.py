"""A checkout owned by another user still names its commit (git's safe.directory)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from requirements import need, root_problem, tool_problem

from harness.hostinfo import git_info

pytestmark = pytest.mark.unit


def test_a_checkout_of_another_user_still_has_its_commit(tmp_path: Path) -> None:
    need(root_problem("to give a checkout to another user"))
    need(tool_problem("git", "git"))
    repo = tmp_path / "checkout"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    for folder, _, files in os.walk(repo):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, 65534, 65534)  # nobody's now: 'dubious ownership' to root's git
    plain = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True)
    assert plain.returncode != 0  # what made every such run '-nogit'
    assert git_info(repo) == {"commit": head.stdout.strip(), "dirty": False}
