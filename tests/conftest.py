"""Shared helpers: the sleepy fixture suite, isolated results/lock paths, running the CLI."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from browser import require_browser, start_driver
from collectorprocs import LineProcess
from historydb import create_database, postgres_server
from requirements import need, root_problem, tool_problem

FIXTURES = Path(__file__).resolve().parent / "fixtures"
HARNESS = [sys.executable, "-m", "harness"]
# The test tiers (pyproject.toml's markers); every test has at least one.
TIERS = ("unit", "e2e", "bpf", "browser")
# The harness warns of workload processes it did not start; under pytest -n, a parallel
# test's workloads are such processes, so tests that read stderr line by line skip it.
OTHERS_RUNNING = "harness: other workload processes"


def next_own_line(stream: IO[str]) -> str:
    """The harness's next stderr line, past a parallel test's other-workloads warnings."""
    line = stream.readline()
    while line.startswith(OTHERS_RUNNING):
        line = stream.readline()
    return line


def line_with(text: str, *parts: str) -> str:
    """The first line of `text` that holds every one of `parts`."""
    return next(line for line in text.splitlines() if all(part in line for part in parts))


def assert_holds(text: str, *parts: str) -> None:
    """Every one of `parts` is in `text`; a failure names the missing ones and the text."""
    missing = [part for part in parts if part not in text]
    assert not missing, (missing, text)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test without a tier would escape `-m` selections such as CI's `bpf or browser`."""
    untiered = [
        item.nodeid for item in items if not any(item.get_closest_marker(tier) for tier in TIERS)
    ]
    if untiered:
        raise pytest.UsageError(f"tests without a tier marker {TIERS}: {', '.join(untiered)}")


@pytest.fixture
def harness_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Env for a harness that sees only the fixture suites and writes only under tmp_path.

    Set in this process too (for in-process `cli.main` calls); returned for subprocesses.
    No probes unless a test asks for them (tests/test_probes*.py do).
    """
    values = {
        "HARNESS_PROBES": "none",
        "HARNESS_WORKLOADS": str(FIXTURES),
        "HARNESS_RESULTS": str(tmp_path / "results"),
        "HARNESS_LOCK": str(tmp_path / "harness.lock"),
        "SLEEPY_LOG": str(tmp_path / "sleepy.log"),
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("HARNESS_SUITES_PATH", raising=False)  # set by a test that wants it
    return dict(os.environ)


def run_harness(
    args: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HARNESS, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def start_harness(
    args: list[str],
    env: dict[str, str],
    stdout: int = subprocess.DEVNULL,
    own_session: bool = False,
) -> subprocess.Popen[str]:
    """The harness started with `args`, its stderr a text pipe (its stdout too if asked with
    subprocess.PIPE), in a session and process group of its own if `own_session`."""
    return subprocess.Popen(
        [*HARNESS, *args],
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=own_session,
    )


def one_repeat(strategy: str = "slow", duration_s: str = "0.1") -> list[str]:
    """`run sleepy` of one strategy, one repeat, no warm-up: the shortest run there is."""
    return [
        "run",
        "sleepy",
        "--strategies",
        strategy,
        "--repeat",
        "1",
        "--duration-s",
        duration_s,
        "--warmup-s",
        "0",
    ]


def runs_dir(env: dict[str, str]) -> Path:
    return Path(env["HARNESS_RESULTS"]) / "runs"


def only_run(env: dict[str, str]) -> dict[str, Any]:
    """The run.json of the one run directory the test created."""
    run_dirs = list(runs_dir(env).iterdir())
    assert len(run_dirs) == 1, run_dirs
    doc: dict[str, Any] = json.loads((run_dirs[0] / "run.json").read_text())
    return doc


def sleepy_log(env: dict[str, str]) -> list[dict[str, Any]]:
    """One entry per `sleepy.py run`: pid, server_pid, strategy, params."""
    path = Path(env["SLEEPY_LOG"])
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def process_gone(pid: int) -> bool:
    """Gone for good: not running, not a zombie waiting to be reaped."""
    return not Path(f"/proc/{pid}").exists()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """A headless Chromium for a test module's checks in a browser (tests/browser.py)."""
    require_browser()
    chrome = start_driver()
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture
def reap() -> Iterator[list[LineProcess]]:
    """Processes a test started, killed if it fails half-way."""
    started: list[LineProcess] = []
    yield started
    for process in started:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()


@contextlib.contextmanager
def mounted_tmpfs(mount: Path, size_mb: int) -> Iterator[Path]:
    """A tmpfs of `size_mb` MiB at `mount` (made here), unmounted whatever the test did."""
    need(root_problem("to mount a tmpfs"))
    need(tool_problem("mount", "mount"))
    mount.mkdir()
    options = f"size={size_mb}m"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted whatever the test did."""
    with mounted_tmpfs(tmp_path / "tmpfs", 2) as mount:
        yield mount


# The history's database, both kinds: a PostgreSQL server a module, a database a test.
@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(
    params=[
        pytest.param("sqlite", marks=pytest.mark.unit),
        pytest.param("postgresql", marks=pytest.mark.e2e),
    ]
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    base: str = request.getfixturevalue("postgres")
    return create_database(base, f"t_{abs(hash(str(tmp_path))) % 10**9}")
