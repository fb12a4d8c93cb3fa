"""The nightly's hour and how it is shared: the bench's runs first, then the confirming runs
of the night's provisional changes (`harness history confirm`) in CONFIRM_SHARE of it."""

from __future__ import annotations

HOUR_S = 3600.0
CONFIRM_SHARE = 0.10
"""Of the hour, for the confirming runs after the bench; the bench plans in the rest."""
CONFIRM_MIN_REPEATS = 5
"""A change is confirmed with at least as many repeats as a night gives its cell (make bench's
5), else it is left to the night's own test."""
CONFIRM_MAX_REPEATS = 10
"""Beyond 10 repeats a confirmation decides little more (a 3% step in 1% noise is found in 99
of 100 series at 10 repeats, docs/dashboard.md); the share's rest is left unused."""


def confirm_share_s() -> float:
    return HOUR_S * CONFIRM_SHARE


def bench_share_s() -> float:
    return HOUR_S - confirm_share_s()
