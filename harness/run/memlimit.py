"""The memory limit of one repeat, derived from the machine: what is available now, less a
reserve for the harness, its probes and the rest of the system."""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.errors import BadInput

MEMINFO = Path("/proc/meminfo")
ENV = "HARNESS_REPEAT_MEMORY_MAX"
MIN_RESERVE = 512 << 20
RESERVE_SHARE = 0.1
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def mem_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes; None if unknown."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def parse_size(text: str) -> int:
    """`512M`, `2G`, `1.5GiB`, `1048576`: bytes (K, M, G, T are powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(text)
    return int(float(match[1]) * _UNITS[match[2].upper()])


def repeat_limit() -> int | None:
    """Bytes one repeat's processes may use together; None when the machine does not say.

    $HARNESS_REPEAT_MEMORY_MAX sets it (e.g. `2G`), for machines shared with other work.
    """
    text = os.environ.get(ENV)
    if text:
        try:
            value = parse_size(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise BadInput(f"{ENV} must be a size such as 512M or 4G, got {text!r}")
        return value
    available = mem_available()
    if available is None:
        return None
    return max(available - max(MIN_RESERVE, int(available * RESERVE_SHARE)), MIN_RESERVE)


def human(size: float) -> str:
    """1536 MiB -> `1.5 GiB`."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.3g} {unit}"
        size /= 1024
    return f"{size:.3g} TiB"
