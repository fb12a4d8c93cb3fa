"""The git commands a bisection needs, read-only on the user's repository: revisions, their
order, their subjects. Worktrees are in worktrees.py."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput, HarnessError

GIT_TIMEOUT_S = 120


class GitFailed(HarnessError):
    """A git command that should not fail did."""


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`git -C repo ARGS`, its output captured; GitFailed (one line) when `check` and it fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as err:
        raise BadInput("git is not installed (a bisection checks out commits with it)") from err
    if check and done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise GitFailed(f"git {' '.join(args)} failed: {last}")
    return done


def toplevel(folder: Path) -> Path | None:
    """The root of the git working tree that holds `folder`, or None outside one."""
    done = git(folder, "rev-parse", "--show-toplevel", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return Path(done.stdout.strip())


def resolve(repo: Path, rev: str, option: str) -> str:
    """The full hash of commit `rev`; BadInput naming `option` when git does not know it."""
    if rev.startswith("-"):
        raise BadInput(f"{option} {rev!r}: not a revision")
    done = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               check=False)  # fmt: skip
    if done.returncode != 0:
        raise BadInput(f"{option} {rev!r}: git does not know this revision in {repo}")
    return done.stdout.strip()


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return git(repo, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after `good` up to `bad` included, oldest first, on the paths from good to
    bad (as `git bisect` takes them on a linear history)."""
    done = git(repo, "rev-list", "--reverse", "--ancestry-path", "--first-parent", f"{good}..{bad}")
    return done.stdout.split()


def has_file(repo: Path, commit: str, path: str) -> bool:
    return git(repo, "cat-file", "-e", f"{commit}:{path}", check=False).returncode == 0


@dataclass(frozen=True)
class CommitInfo:
    hash: str
    subject: str
    author_date: str  # ISO 8601

    @property
    def short(self) -> str:
        return self.hash[:12]


def commit_info(repo: Path, commit: str) -> CommitInfo:
    done = git(repo, "show", "-s", "--format=%H%x00%s%x00%aI", commit)
    full, subject, date = ([*done.stdout.rstrip("\n").split("\x00"), "", ""])[:3]
    return CommitInfo(full, subject, date)
