"""suite.toml `requires`: a suite whose commands are not on PATH is skipped by `harness bench`
and `harness build` with the reason, refused by `harness run` (exit 2), and listed with the
reason by `harness list` (the lettuce suite on a machine without Java)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, run_harness

from harness.errors import BadInput
from harness.suites import load_suite

pytestmark = pytest.mark.e2e

MISSING = "no-such-command-for-harness-tests"


@pytest.fixture
def needy_env(harness_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Two fixture suites: sleepy, and a copy named needy that requires MISSING."""
    workloads = tmp_path / "workloads"
    shutil.copytree(FIXTURES / "sleepy", workloads / "sleepy")
    shutil.copytree(FIXTURES / "sleepy", workloads / "needy")
    sleepy = workloads / "sleepy" / "suite.toml"  # a one-repeat matrix: bench is not the point
    small = sleepy.read_text().replace('["slow", "fast"]', '["slow"]').replace("[64, 3200]", "[64]")
    sleepy.write_text(small.replace("repeats = 2", "repeats = 1"))
    manifest = workloads / "needy" / "suite.toml"
    text = manifest.read_text().replace('name = "sleepy"', 'name = "needy"')
    manifest.write_text(
        text.replace('baseline = "slow"', f'baseline = "slow"\nrequires = ["{MISSING}"]')
    )
    return {**harness_env, "HARNESS_WORKLOADS": str(workloads)}


def test_bench_skips_and_run_refuses(needy_env: dict[str, str]) -> None:
    reason = f"needs {MISSING}, not found on PATH"
    bench = run_harness(["bench", "--quick"], needy_env)
    assert bench.returncode == 0, bench.stderr
    assert f"skipping suite 'needy': {reason}" in bench.stderr
    assert "sleepy" in bench.stdout + bench.stderr
    run = run_harness(["run", "needy", "--repeat", "1", "--duration-s", "0.1"], needy_env)
    assert run.returncode == 2
    assert f"suite 'needy' cannot run here: {reason}" in run.stderr
    build = run_harness(["build"], needy_env)
    assert build.returncode == 0, build.stderr
    assert f"skipping suite 'needy': {reason}" in build.stderr
    listing = run_harness(["list"], needy_env)
    assert MISSING in listing.stdout


def test_requires_must_be_a_list_of_names(tmp_path: Path) -> None:
    manifest = tmp_path / "suite.toml"
    manifest.write_text('name = "x"\nbinary = "x"\nrequires = "java"\n')
    with pytest.raises(BadInput, match="requires"):
        load_suite(manifest)
