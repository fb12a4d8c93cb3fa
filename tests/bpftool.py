"""What BPF objects are loaded, for the tests that no program or link outlives a collector.

Tests run in parallel (pytest -n), so another test's collector may load programs of the same
names at any moment: every check is scoped to the processes a test started.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

FREED_WITHIN_S = 10.0  # the kernel frees a released program or link after an RCU grace period


def _show(kind: str) -> list[dict[str, Any]]:
    listing = subprocess.run(
        ["bpftool", "-j", kind, "show"], capture_output=True, text=True, check=True
    )
    entries: list[dict[str, Any]] = json.loads(listing.stdout or "[]")
    return entries


def bpf_ids(kind: str) -> set[int]:
    """Ids of every BPF program or link loaded on the system."""
    return {int(entry["id"]) for entry in _show(kind)}


def named(prefixes: str | tuple[str, ...]) -> set[int]:
    """Ids of the loaded BPF programs whose name starts with one of `prefixes`."""
    return {int(e["id"]) for e in _show("prog") if e.get("name", "").startswith(prefixes)}


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


def prog_holders() -> dict[int, set[int]]:
    """BPF program id -> processes holding it (a program fd or a link fd of it)."""
    holders: dict[int, set[int]] = {}
    for fdinfo in Path("/proc").glob("[0-9]*/fdinfo/*"):
        try:
            text = fdinfo.read_text()
        except OSError:
            continue  # gone meanwhile
        for line in text.splitlines():
            if line.startswith("prog_id:"):
                holders.setdefault(int(line.split()[1]), set()).add(int(fdinfo.parts[2]))
    return holders


def left_behind(
    progs: set[int], links: set[int], prefixes: str | tuple[str, ...], before: set[int]
) -> tuple[set[int], set[int], set[int]]:
    """What a collector that held `progs` and `links` left loaded once it exited, given the
    programs loaded before it started (`before`): those of its programs and links still
    there, and the programs of its names loaded since that no process holds (pinned, say).
    A parallel test's collector holds its own programs, so they are not counted; one that
    has just exited is given the time the kernel takes to free them."""
    deadline = time.monotonic() + FREED_WITHIN_S
    while True:
        # Listed before their holders are read: a program listed had a holder as it loaded.
        recent = named(prefixes) - before
        holders = prog_holders()
        orphans = {p for p in recent if not holders.get(p)}
        found = (progs & bpf_ids("prog"), links & bpf_ids("link"), orphans)
        if not any(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)
