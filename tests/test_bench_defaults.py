"""The suites' `[bench]` defaults: `make bench` with its explain repeats fits the nightly's
hour (docs/probes.md "The nightly's hour")."""

from __future__ import annotations

import pytest
from conftest import run_harness

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
    lines = {line.split(":")[0].strip(): line for line in done.stdout.splitlines()[1:-1]}
    assert set(lines) == {"fio", "io", "lettuce", "pools", "timers", "tokenbucket"}, done.stdout
    for suite, line in lines.items():
        explained = "x 5 repeats + 1 explain repeat of" in line
        assert explained is (suite != "pools") and "x 5 repeats" in line, line
    estimate = done.stdout.splitlines()[-1].split(": ")[1]  # [h:]mm:ss
    seconds = sum(int(v) * 60**i for i, v in enumerate(reversed(estimate.split(":"))))
    assert seconds < 3600, done.stdout
