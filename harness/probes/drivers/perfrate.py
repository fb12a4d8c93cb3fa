"""perf's sampling frequency: bounded up front by the kernel's perf_event_max_sample_rate, and
the one perf really used read back from its warning when the kernel lowered the limit since."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from harness.errors import BadInput

MAX_SAMPLE_RATE = Path("/proc/sys/kernel/perf_event_max_sample_rate")
# perf record: "warning: Maximum frequency rate (25,000 Hz) exceeded, throttling from
# 100,000 Hz to 25,000 Hz."
_THROTTLED = re.compile(r"throttling from [\d,]+ Hz to ([\d,]+) Hz")


def kernel_max(path: Path = MAX_SAMPLE_RATE) -> int | None:
    """The kernel's limit now, or None where it cannot be read (no perf events: no limit)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def check_frequency(hz: int, path: Path = MAX_SAMPLE_RATE) -> None:
    """BadInput (exit 2) for a frequency above the kernel's limit, naming the limit."""
    limit = kernel_max(path)
    if limit is not None and hz > limit:
        raise BadInput(
            f"--perf-frequency {hz}: above the kernel's limit of {limit} Hz ({path}); "
            f"use at most {limit}"
        )


def used_frequency(requested: int, perf_stderr: Iterable[str]) -> int:
    """The frequency perf sampled at: the requested one unless perf says it throttled."""
    for line in perf_stderr:
        found = _THROTTLED.search(line)
        if found:
            return int(found[1].replace(",", ""))
    return requested
