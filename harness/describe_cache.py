"""The describe output of each suite kept between calls (<results>/cache/describe/), so that
`harness list` does not start every suite's binary again: it is used while nothing it may
depend on has changed, and described again as soon as something has.

What it depends on is read from the file system, not trusted to a build: the name, size,
modification and change times and inode of the binary and of every file and folder under
the suite's folder (its suite.toml, a script's sources, the jar a launcher starts). A folder
tagged as a cache (a CACHEDIR.TAG, as cargo's target/; or Python's __pycache__) is left out,
the binary in it is not. An output is kept only when these did not change while the binary
described itself and the newest of them is SETTLED_S old: a file changed within its time
stamp's resolution of the moment it was read would look the same changed again."""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness import kept
from harness.describe import Description, describe_output, read_description
from harness.suites import Suite

FORMAT = 1  # of an entry; another makes every entry a miss
SETTLED_S = 2.0
MAX_ENTRIES = 100_000  # walked under a suite's folder; past it, nothing is kept
_CACHE_TAG = "CACHEDIR.TAG"  # https://bford.info/cachedir/
_SKIPPED = frozenset({"__pycache__"})
# A path under the suite's folder and what changes when it changes, the two times last.
Entry = tuple[str, tuple[int, ...]]


def cache_folder() -> Path:
    return kept.path("describe")


def describe_cached(suite: Suite) -> Description:
    """The suite's description, from its kept describe output while that is current, else
    from its binary (as describe.describe), kept for the next call."""
    entry = cache_folder() / f"{kept.digest([str(suite.binary), str(suite.folder)])}.json"
    before = _fingerprint(suite)
    if before is not None:
        output = kept.read(entry, before[0])
        if output is not None:
            return read_description(suite, output)
    output = describe_output(suite)
    description = read_description(suite, output)  # an output that fails is not kept
    if before is not None and before[1] and _fingerprint(suite) == before:
        kept.write(entry, before[0], output)
    return description


def _fingerprint(suite: Suite) -> tuple[str, bool] | None:
    """A digest of what the suite's describe may depend on, and whether it has settled;
    None when it cannot be read (or is too large to be worth it)."""
    now_ns = time.time_ns()
    try:
        entries: list[Entry] = [(f"binary {suite.binary}", kept.stat_key(suite.binary.stat()))]
        if not _walk(suite.folder, "", entries):
            return None
    except OSError:
        return None
    newest_ns = max(max(times[-2:]) for _, times in entries)
    settled = newest_ns < now_ns - SETTLED_S * 1e9
    return kept.digest([FORMAT, str(suite.folder), entries]), settled


def _walk(folder: Path | str, prefix: str, entries: list[Entry]) -> bool:
    """Appends every file and folder under `folder` (symbolic links followed, not into
    folders); False past MAX_ENTRIES."""
    with os.scandir(folder) as scan:
        found = sorted(scan, key=lambda e: e.name)
    if any(e.name == _CACHE_TAG for e in found) and prefix:
        return True
    for e in found:
        name = f"{prefix}{e.name}"
        try:
            entries.append((name, kept.stat_key(e.stat())))
        except FileNotFoundError:  # a dangling link
            entries.append((f"{name} -> {os.readlink(e.path)}", (0, 0)))
        inside = e.is_dir(follow_symlinks=False) and e.name not in _SKIPPED
        if len(entries) > MAX_ENTRIES or (inside and not _walk(e.path, f"{name}/", entries)):
            return False
    return True
