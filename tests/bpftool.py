"""What BPF objects are loaded, for the tests that no program or link outlives a collector."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path


def bpf_ids(kind: str) -> set[int]:
    """Ids of every BPF program or link loaded on the system."""
    listing = subprocess.run(
        ["bpftool", "-j", kind, "show"], capture_output=True, text=True, check=True
    )
    return {entry["id"] for entry in json.loads(listing.stdout or "[]")}


def prog_count(prefixes: str | tuple[str, ...]) -> int:
    """Loaded BPF programs whose name starts with one of `prefixes` (a collector's)."""
    listing = subprocess.run(
        ["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True
    )
    return sum(
        1
        for entry in json.loads(listing.stdout or "[]")
        if entry.get("name", "").startswith(prefixes)
    )


def held_ids(pid: int) -> tuple[set[int], set[int]]:
    """The BPF programs and links a process holds, from its fds' fdinfo."""
    progs: set[int] = set()
    links: set[int] = set()
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            text = info.read_text()
        except OSError:
            continue
        if match := re.search(r"^link_id:\s+(\d+)", text, re.M):
            links.add(int(match.group(1)))
        elif match := re.search(r"^prog_id:\s+(\d+)", text, re.M):
            progs.add(int(match.group(1)))
    return progs, links
