"""A bisection's folder under results/ and the git worktrees in it.

`<results>/<kind>/<id>/` holds owner.json (the harness process and the repository),
worktrees/<slot> (a `git worktree add --detach` each: never the user's working tree, index,
branch or HEAD), cache/ (the slots' build caches) and logs/. A slot is a fixed path that
the commits it builds are checked out in one after another (`git checkout --detach` inside
it), so that a build keyed on paths and modification times (cargo's fingerprints, Go's
build cache) redoes only what the new commit changed. The worktrees and the cache go at the
end, also after Ctrl-C; after a SIGKILL the next bisection or `run --rev` finds the
folder's owner gone and removes them (reclaim), as an abandoned run's scratch files are."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
from pathlib import Path

from harness.base.owner import Owner
from harness.bisect import gitrepo

OWNER_FILE = "owner.json"
KINDS = ("bisect", "revs")
SLOT = re.compile(r"[a-z][a-z0-9-]{0,31}")


class Workspace:
    def __init__(self, root: Path, repo: Path) -> None:
        self.repo = repo
        root = root.absolute()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        folder = root / stamp
        n = 1
        while True:
            try:
                folder.mkdir(parents=True)
                break
            except FileExistsError:
                n += 1
                folder = root / f"{stamp}-{n}"
        self.folder = folder
        self.id = folder.name
        owner = Owner.current()
        (folder / OWNER_FILE).write_text(
            json.dumps({"owner": owner.token, "boot_id": owner.boot_id, "repo": str(repo)})
        )
        self.worktrees = folder / "worktrees"
        self.cache = folder / "cache"
        self.logs = folder / "logs"
        for sub in (self.worktrees, self.cache, self.logs):
            sub.mkdir()
        # Per slot, the files its last build copied into its worktree (builds.py).
        self.copied: dict[str, list[Path]] = {}

    def checkout(self, slot: str, commit: str) -> Path:
        """Slot `slot`'s worktree, `commit` checked out in it, detached: added the first time,
        then `git checkout --detach --force` in it, which rewrites only the files that differ
        (the others keep their modification times, and the builds their outputs)."""
        if not SLOT.fullmatch(slot):
            raise ValueError(f"not a slot name: {slot!r}")
        path = self.worktrees / slot
        if path.exists():
            gitrepo.git(path, "checkout", "--detach", "--force", "--quiet", commit)
        else:
            gitrepo.git(self.repo, "worktree", "add", "--detach", "--quiet", str(path), commit)
        return path

    def close(self) -> None:
        """Every worktree and the caches go; the logs and measurements stay."""
        clean(self.folder, self.repo)


def _remove_worktree(repo: Path, path: Path) -> None:
    gitrepo.git(repo, "worktree", "remove", "--force", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)


def clean(folder: Path, repo: Path) -> None:
    worktrees = folder / "worktrees"
    if worktrees.is_dir():
        for path in sorted(worktrees.iterdir()):
            _remove_worktree(repo, path)
        shutil.rmtree(worktrees, ignore_errors=True)
    shutil.rmtree(folder / "cache", ignore_errors=True)
    # A worktree whose `add` was killed half-way is locked and has no folder: unlock, prune.
    listed = gitrepo.git(repo, "worktree", "list", "--porcelain", check=False).stdout
    for line in listed.splitlines():
        if line.startswith("worktree ") and line[len("worktree ") :].startswith(str(worktrees)):
            gitrepo.git(repo, "worktree", "unlock", line[len("worktree ") :], check=False)
    gitrepo.git(repo, "worktree", "prune", check=False)


def reclaim(results: Path) -> list[Path]:
    """The folders of bisections whose harness is gone (killed) that still had worktrees or
    caches: those removed. Returns the folders reclaimed."""
    reclaimed = []
    for kind in KINDS:
        root = results / kind
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            if not ((folder / "worktrees").exists() or (folder / "cache").exists()):
                continue
            try:
                data = json.loads((folder / OWNER_FILE).read_text())
                owner = Owner.from_token(str(data["owner"]))
                repo = Path(str(data["repo"]))
            except (OSError, ValueError, KeyError):
                continue
            if owner is None or (data.get("boot_id") == owner.boot_id and owner.alive()):
                continue
            with contextlib.suppress(OSError, gitrepo.GitFailed):
                clean(folder, repo)
                reclaimed.append(folder)
    return reclaimed
