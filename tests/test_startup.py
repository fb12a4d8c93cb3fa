"""What the CLI imports before it answers: `harness --help` and the parser of one verb leave
the heavy libraries (numpy, scipy, pydantic, matplotlib, SQLAlchemy) for the handlers that
use them. The time they would cost is a benchmark's figure, not a test's: these hold the
imports that make it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from harness import cli, describe_cache

pytestmark = pytest.mark.unit

HEAVY = ("numpy", "scipy", "pydantic", "matplotlib", "sqlalchemy", "alembic", "jinja2")


def imported_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after `harness ARGS` (its exit included)."""
    script = (
        "import json, sys\n"
        "from harness.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert "MODULES " in done.stderr, done.stderr
    return set(json.loads(done.stderr.rpartition("MODULES ")[2]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.partition(".")[0] in HEAVY)


def test_the_top_level_help_is_the_verbs_own_help_lines() -> None:
    """`harness --help`, built from cli.VERBS, says what the parser of every verb says."""
    assert cli.summary_parser().format_help() == cli.build_parser().format_help()


@pytest.mark.parametrize("args", [["--help"], [], ["no-such-verb"]])
def test_a_command_line_without_a_verb_imports_no_verb(args: list[str]) -> None:
    modules = imported_after(args)
    assert "harness.cli" in modules
    assert not heavy(modules)
    assert not modules & _verb_modules()
    assert "rich" not in modules


@pytest.mark.parametrize(
    "args",
    [
        *[[verb, "--help"] for verb in ("list", "build", "run", "bench", "probe", "compare")],
        *[[verb, "--help"] for verb in ("report", "dashboard")],
        ["doctor", "--help"],
        ["run"],
        ["run", "sleepy", "--repeat", "0"],
    ],
)
def test_a_verbs_help_and_usage_errors_import_no_heavy_library(args: list[str]) -> None:
    modules = imported_after(args)
    assert f"harness.commands.{args[0]}" in modules
    assert not heavy(modules)


@pytest.mark.parametrize(
    "refused",
    [["--strategies", "no-such-strategy"], ["--param", "rate=-1"], ["--scenario", "nope"]],
)
def test_a_run_refused_by_its_plan_imports_no_heavy_library(
    refused: list[str], harness_env: dict[str, str]
) -> None:
    """The suite, its describe and the plan are checked before the run pipeline is imported:
    a test of bad input, as most of `make test`'s runs are, starts no more than that."""
    modules = imported_after(["run", "sleepy", *refused], harness_env)
    assert "harness.run.plan" in modules
    assert not heavy(modules)


def _verb_modules() -> set[str]:
    return {f"harness.commands.{verb}" for verb in cli.VERBS}


def test_a_list_of_described_suites_imports_no_heavy_library(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "sleepy").symlink_to(FIXTURES / "sleepy")
    env = {**harness_env, "HARNESS_WORKLOADS": str(workloads)}
    first = imported_after(["list"], env)  # describes sleepy and keeps it
    assert list(describe_cache.cache_folder().iterdir())
    again = imported_after(["list"], env)
    assert "harness.commands.list" in again
    assert not heavy(first) and not heavy(again)
