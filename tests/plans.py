"""A run plan as the tests want one: build_plan with the shortest settings unless told."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.describe import Description
from harness.run.plan import Plan, build_plan
from harness.suites import Suite

# Every strategy and scenario the suite describes, no sweep, 2 repeats of 1 s, no warm-up.
DEFAULTS: dict[str, Any] = {
    "strategies": None,
    "scenarios": None,
    "sweep": {},
    "duration_s": 1.0,
    "warmup_s": 0.0,
    "repeats": 2,
    "order": "interleaved",
    "probes": (),
}


def plan(suite: Suite, description: Description, **options: Any) -> Plan:
    """build_plan with DEFAULTS, as overridden by `options`."""
    return build_plan(suite, description, **{**DEFAULTS, **options})


@dataclass(frozen=True)
class PrintedRow:
    """A suite's line of `harness bench --plan`'s table."""

    cells: int
    repeats: int
    explain_repeats: int
    window: str  # "0.5 s + 2 s": warm-up + measured window
    about: str  # [h:]mm:ss
    startup: str  # the start-up a repeat and where it was learned


ROW = re.compile(r"^  (\S+) +(\d+) +(\d+)(?: \+ (\d+))? +(\S+ s \+ \S+ s) +(\S+)  (.+)$")


def printed_plan(stdout: str) -> tuple[dict[str, PrintedRow], str]:
    """`harness bench --plan`'s table: each suite's row by name, and the estimated duration."""
    lines = stdout.splitlines()
    header = "suite cells repeats warm-up + window about start-up a repeat"
    assert lines[0].startswith("bench plan (") and lines[1].split() == header.split(), stdout
    rows = {}
    for line in lines[2:]:
        if (match := ROW.match(line)) is None:
            break
        name, cells, repeats, explain, window, about, startup = match.groups()
        rows[name] = PrintedRow(int(cells), int(repeats), int(explain or 0), window, about, startup)
    (estimate,) = [line.split(": ")[1] for line in lines if "estimated duration: " in line]
    return rows, estimate
