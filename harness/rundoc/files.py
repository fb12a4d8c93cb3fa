"""The files of a run directory that run.json names, checked before they are linked or read."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote


def run_file(run_dir: Path, rel: Any) -> str | None:
    """The URL-quoted relative link to `rel` when it names an existing file inside the run
    directory; None otherwise (absolute, escaping with .., or missing)."""
    if not isinstance(rel, str) or not rel:
        return None
    posix = PurePosixPath(rel)
    if posix.is_absolute():
        return None
    root = run_dir.resolve()
    target = (root / posix).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return None
    return quote(posix.as_posix())
