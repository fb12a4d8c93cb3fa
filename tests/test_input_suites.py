"""Bad input that only a workload or bpftrace can see, caught before anything starts: the
repo's suites through their `check`, and a bpftrace script with a syntax error."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_harness, runs_dir
from requirements import need

from harness.probes.availability import bpftrace_problem
from harness.probes.btcheck import dry_run_problem

SHORT = ["--duration-s", "1", "--warmup-s", "0", "--repeat", "5", "--probes", "none"]
LONG_LATENCY = ["--param", "latency_ms=60000", "--param", "trace_duration_s=1"]
SYNTAX_ERROR = "uprobe:/bin/true:main { @calls = count( }\n"


def refused(env: dict[str, str], args: list[str]) -> str:
    """The one error line of a run refused with exit 2 that created no run directory."""
    done = run_harness(["run", *args], env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), done.stderr
    assert not runs_dir(env).exists() or not any(runs_dir(env).iterdir())
    return lines[0]


@pytest.fixture
def repo_suites(harness_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """harness_env with the repo's own workloads (timers, pools)."""
    monkeypatch.delenv("HARNESS_WORKLOADS")
    return {k: v for k, v in harness_env.items() if k != "HARNESS_WORKLOADS"}


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["timers", "--strategies", "none", "--duration-s", "86401"], "--duration-s"),
        (["timers", "--strategies", "none", "--warmup-s", "100000"], "--warmup-s"),
        (["pools", "--strategies", "fifo-channel", "--duration-s", "86401"], "--duration-s"),
        (["pools", "--strategies", "fifo-channel", "--warmup-s", "100000"], "--warmup-s"),
        (["pools", "--strategies", "fifo-channel", "--param", "settings=0,0"], "settings"),
        (
            ["pools", "--strategies", "fifo-channel", "--param", "load=trace", *LONG_LATENCY],
            "latency",
        ),
    ],
)
def test_the_repo_suites_reject_what_only_they_see_before_anything_starts(
    repo_suites: dict[str, str], args: list[str], named: str
) -> None:
    # The later --duration-s/--warmup-s of args win over SHORT's.
    line = refused(repo_suites, [args[0], *SHORT, *args[1:]])
    assert f"suite '{args[0]}', cell " in line and named in line


@pytest.mark.bpf
def test_a_bpftrace_syntax_error_is_bad_input_before_anything_starts(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    need(bpftrace_problem())
    script = tmp_path / "broken.bt"
    script.write_text(SYNTAX_ERROR)
    line = refused(
        harness_env,
        ["sleepy", "--duration-s", "0.1", "--warmup-s", "0", "--probes", f"bt:{script}"],
    )
    assert f"probe 'bt:{script}': bpftrace rejects the script: " in line
    assert "syntax error" in line


@pytest.mark.bpf
def test_the_repo_s_bpftrace_scripts_pass_the_dry_run() -> None:
    need(bpftrace_problem())
    for script in sorted((Path(__file__).parents[1] / "bpf").glob("*.bt")):
        assert dry_run_problem(script) is None, script
