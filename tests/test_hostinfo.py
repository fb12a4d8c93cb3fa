import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.hostinfo import (
    collect_host,
    format_cpulist,
    gather,
    gather_soon,
    git_info,
    parse_cpulist,
    run_together,
)

pytestmark = pytest.mark.unit

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7313P 16-Core Processor

processor\t: 1
model name\t: AMD EPYC 7313P 16-Core Processor
"""


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def fake_host(root: Path) -> Path:
    write(root, "proc/cpuinfo", CPUINFO)
    write(root, "proc/sys/kernel/hostname", "bench1")
    write(root, "proc/sys/kernel/osrelease", "6.8.0-45-generic")
    cpu = "sys/devices/system/cpu"
    write(root, f"{cpu}/online", "0-31")
    write(root, f"{cpu}/cpu0/cpufreq/scaling_governor", "performance")
    write(root, f"{cpu}/smt/active", "1")
    write(root, f"{cpu}/isolated", "2-7,16")
    write(root, f"{cpu}/intel_pstate/no_turbo", "1")
    write(root, "proc/meminfo", "MemTotal:       67108864 kB\nMemFree:        1024 kB\n")
    return root


def test_collect_host_reads_proc_and_sys(tmp_path: Path) -> None:
    assert collect_host(fake_host(tmp_path)) == {
        "hostname": "bench1",
        "kernel": "6.8.0-45-generic",
        "cpu_model": "AMD EPYC 7313P 16-Core Processor",
        "logical_cpus": 32,
        "governor": "performance",
        "smt": True,
        "isolated_cpus": [2, 3, 4, 5, 6, 7, 16],
        "turbo": False,
        "memory_bytes": 64 * 1024**3,
    }


def test_collect_host_says_unknown_when_sys_has_nothing(tmp_path: Path) -> None:
    assert collect_host(tmp_path) == {
        "hostname": None,
        "kernel": None,
        "cpu_model": None,
        "logical_cpus": None,
        "governor": "unknown",
        "smt": None,
        "isolated_cpus": None,
        "turbo": None,
        "memory_bytes": None,
    }


@pytest.mark.parametrize(
    ("relative", "value", "turbo"),
    [
        ("intel_pstate/no_turbo", "0", True),
        ("cpufreq/boost", "1", True),
        ("cpufreq/boost", "0", False),
        ("cpufreq/policy0/boost", "1", True),
    ],
)
def test_turbo_from_each_driver(tmp_path: Path, relative: str, value: str, turbo: bool) -> None:
    write(tmp_path, f"sys/devices/system/cpu/{relative}", value)
    assert collect_host(tmp_path)["turbo"] is turbo


def test_collect_host_on_this_machine() -> None:
    host = collect_host()
    assert host["kernel"] == os.uname().release
    assert isinstance(host["logical_cpus"], int) and host["logical_cpus"] >= 1
    assert isinstance(host["governor"], str)
    assert set(host) == {
        "hostname",
        "kernel",
        "cpu_model",
        "logical_cpus",
        "governor",
        "smt",
        "isolated_cpus",
        "turbo",
        "memory_bytes",
        "toolchains",
    }
    assert isinstance(host["memory_bytes"], int) and host["memory_bytes"] > 0


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("", []), ("3", [3]), ("0-3", [0, 1, 2, 3]), ("0-1,4,6-7", [0, 1, 4, 6, 7])],
)
def test_cpulist_round_trip(text: str, cpus: list[int]) -> None:
    assert parse_cpulist(text) == cpus
    assert format_cpulist(cpus) == text


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_git_info_commit_and_dirty(tmp_path: Path) -> None:
    assert shutil.which("git")
    git(tmp_path, "init", "-q")
    assert git_info(tmp_path) == {"commit": None, "dirty": False}  # no commit yet
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    info = git_info(tmp_path)
    assert len(info["commit"]) == 40
    assert info["dirty"] is False
    (tmp_path / "a.txt").write_text("two\n")
    assert git_info(tmp_path) == {"commit": info["commit"], "dirty": True}


def test_git_info_outside_a_checkout(tmp_path: Path) -> None:
    assert git_info(tmp_path) == {"commit": None, "dirty": None}
    assert git_info(tmp_path / "missing") == {"commit": None, "dirty": None}


def test_commands_run_together_each_with_its_own_output(tmp_path: Path) -> None:
    """The first waits for a file the second writes: run one after the other, the first
    would time out."""
    flag = tmp_path / "flag"
    waits = ["sh", "-c", f'while [ ! -e "{flag}" ]; do sleep 0.01; done; echo first']
    writes = ["sh", "-c", f'touch "{flag}"; echo second; echo oops >&2; exit 3']
    first, second, missing = run_together([waits, writes, ["no-such-command-here"]], 60)
    assert first is not None and (first.returncode, first.stdout) == (0, "first\n")
    assert second is not None and (second.returncode, second.stdout, second.stderr) == (
        3,
        "second\n",
        "oops\n",
    )
    assert missing is None


def test_a_command_that_does_not_finish_in_time_is_none() -> None:
    (done,) = run_together([["sleep", "30"]], timeout_s=0.2)
    assert done is None


def test_the_run_facts_begun_early_are_those_gathered_late(tmp_path: Path) -> None:
    """gather_soon's thread answers what gather would: the repo's and the suite's git state
    (a suite in a folder of the repo) and the host's facts."""
    git(tmp_path, "init", "-q")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "suite.toml").write_text("")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    soon = gather_soon(tmp_path, tmp_path / "suite").result(timeout=60)
    now = gather(tmp_path, tmp_path / "suite")
    assert soon == now
    repo, host, source = soon
    assert repo["dirty"] is False and len(repo["commit"]) == 40
    assert source == {"folder": str((tmp_path / "suite").resolve()), **repo}
    assert host == collect_host()
