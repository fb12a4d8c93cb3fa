"""The stacks of one cell over its repeats, which the probe kinds fill (see profiles/cells)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from harness.profiles import folded


@dataclass
class Stacks:
    oncpu: folded.Folded = field(default_factory=Counter)  # every process, root = comm
    client: folded.Folded = field(default_factory=Counter)  # the measured client only
    offcpu: folded.Folded = field(default_factory=Counter)
    wakeups: folded.Folded = field(default_factory=Counter)
    offwake: folded.Folded = field(default_factory=Counter)  # blocked;--;waker, by ns
    frequency_hz: int | None = None
