"""The suites' `[bench]` defaults: `make bench` with its explain repeats fits the nightly's
hour (docs/probes.md "The nightly's hour")."""

from __future__ import annotations

import pytest
from conftest import run_harness
from plans import printed_plan

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.e2e  # describes the real, built workloads


def test_the_nightly_with_its_explain_repeats_fits_its_hour(harness_env: dict[str, str]) -> None:
    """`make bench`'s plan with the default probes: 5 measurement repeats a cell everywhere
    (the history's alpha needs them), an explain repeat a cell in every suite but pools, and
    under an hour with no earlier run to learn start-up from (docs/probes.md)."""
    env = {**harness_env, "HARNESS_WORKLOADS": str(REPO_ROOT / "workloads")}
    del env["HARNESS_PROBES"]  # the default probes, as `make bench` runs them
    done = run_harness(["bench", "--plan"], env)
    assert done.returncode == 0, done.stderr
    rows, estimate = printed_plan(done.stdout)
    assert set(rows) == {"fio", "io", "lettuce", "pools", "timers", "tokenbucket"}, done.stdout
    for suite, row in rows.items():
        assert row.repeats == 5 and row.explain_repeats == (0 if suite == "pools" else 1), row
    seconds = _seconds(estimate)
    assert seconds < 3600, done.stdout
    # The confirming runs of the night's provisional changes get what the hour leaves, at
    # most 6:00 (docs/dashboard.md, "Confirmation before an alarm"), and the plan says it.
    (line,) = [line for line in done.stdout.splitlines() if "then confirming runs" in line]
    assert line.startswith("  then confirming runs (harness history confirm): up to 6:00"), line
    assert len(line) <= 100, line
    if seconds > 3600 - 360:
        left = line.rpartition("this plan leaves ")[2]
        assert seconds + _seconds(left) == 3600, line


def _seconds(clock: str) -> int:
    return sum(int(v) * 60**i for i, v in enumerate(reversed(clock.split(":"))))
