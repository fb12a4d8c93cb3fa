"""A run plan as the tests want one: build_plan with the shortest settings unless told."""

from __future__ import annotations

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
