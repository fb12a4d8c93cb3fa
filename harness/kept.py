"""What the harness keeps between calls to answer sooner (<results>/cache/): a text under
a key, written whole. A missing or broken entry, or one of another key, is a miss; a results
folder that cannot be written keeps nothing and costs only the next call's work."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from harness.base.writes import write_atomic
from harness.paths import results_root


def path(*parts: str) -> Path:
    return results_root().joinpath("cache", *parts)


def digest(value: object) -> str:
    """A key of `value` (anything JSON can write)."""
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def stat_key(st: os.stat_result) -> tuple[int, ...]:
    """What changes when a file changes; its two times last."""
    return st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def read(entry: Path, key: str) -> str | None:
    try:
        data = json.loads(entry.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    text = data.get("text")
    return text if isinstance(text, str) else None


def write(entry: Path, key: str, text: str) -> None:
    with contextlib.suppress(OSError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(entry, json.dumps({"key": key, "text": text}))
