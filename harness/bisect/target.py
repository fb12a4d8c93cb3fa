"""What a bisection builds: a suite's folder as a path inside a git repository, so that the
same folder can be found in a worktree of any commit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.bisect import gitrepo
from harness.catalog import choose
from harness.errors import BadInput
from harness.paths import suites_path, workloads_root


@dataclass(frozen=True)
class Target:
    name: str  # the suite's name, as the user's checkout has it
    repo: Path  # the git working tree's root
    folder: str  # the suite's folder, relative to `repo` ("" at its root)

    def folder_in(self, root: Path) -> Path:
        return root / self.folder if self.folder else root

    @property
    def manifest(self) -> str:
        return f"{self.folder}/suite.toml" if self.folder else "suite.toml"


def find_target(argument: str) -> Target:
    """The suite named or given by path, and the git repository it is in; BadInput when it is
    not a suite or not inside a git working tree."""
    (suite,) = choose([argument], workloads_root(), suites_path())
    folder = suite.folder.resolve()
    repo = gitrepo.toplevel(folder)
    if repo is None:
        raise BadInput(
            f"suite '{suite.name}' ({folder}) is not inside a git repository: revisions need one"
        )
    repo = repo.resolve()
    relative = folder.relative_to(repo).as_posix()
    return Target(suite.name, repo, "" if relative == "." else relative)
