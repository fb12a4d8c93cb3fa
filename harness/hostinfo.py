"""What a run was measured on: host facts from /proc and /sys, and the git state of the repo.

Every reader takes `root` (default "/") so that tests can point it at a fake tree.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

CPU_SYSFS = Path("sys/devices/system/cpu")


def read_text(root: Path, relative: Path | str) -> str | None:
    """Stripped content of root/relative, or None when it does not exist or cannot be read."""
    try:
        return (root / relative).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def parse_cpulist(text: str) -> list[int]:
    """Kernel cpulist format ("0-3,8,10-11") to CPU numbers; "" is no CPUs."""
    cpus: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def format_cpulist(cpus: list[int]) -> str:
    """CPU numbers back to the kernel's cpulist format: [0, 1, 2, 5] -> "0-2,5"."""
    ranges: list[str] = []
    ordered = sorted(set(cpus))
    start = 0
    for i, cpu in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != cpu + 1:
            first = ordered[start]
            ranges.append(str(first) if first == cpu else f"{first}-{cpu}")
            start = i + 1
    return ",".join(ranges)


def cpu_model(root: Path) -> str | None:
    cpuinfo = read_text(root, "proc/cpuinfo") or ""
    # x86 names it "model name"; some ARM kernels only give "Hardware" or "Model".
    for field in ("model name", "Hardware", "Model"):
        for line in cpuinfo.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == field and value.strip():
                return value.strip()
    return None


def logical_cpus(root: Path) -> int | None:
    online = read_text(root, CPU_SYSFS / "online")
    if online:
        return len(parse_cpulist(online))
    return os.cpu_count() if root == Path("/") else None


def governor(root: Path) -> str:
    return read_text(root, CPU_SYSFS / "cpu0/cpufreq/scaling_governor") or "unknown"


def smt_active(root: Path) -> bool | None:
    value = read_text(root, CPU_SYSFS / "smt/active")
    return None if value is None else value == "1"


def isolated_cpus(root: Path) -> list[int] | None:
    value = read_text(root, CPU_SYSFS / "isolated")
    return None if value is None else parse_cpulist(value)


def turbo_enabled(root: Path) -> bool | None:
    """Turbo/boost state: intel_pstate says it negatively, acpi-cpufreq and amd positively."""
    no_turbo = read_text(root, CPU_SYSFS / "intel_pstate/no_turbo")
    if no_turbo is not None:
        return no_turbo == "0"
    for boost in ("cpufreq/boost", "cpufreq/policy0/boost"):
        value = read_text(root, CPU_SYSFS / boost)
        if value is not None:
            return value == "1"
    return None


def memory_bytes(root: Path) -> int | None:
    """MemTotal of /proc/meminfo."""
    for line in (read_text(root, "proc/meminfo") or "").splitlines():
        key, _, value = line.partition(":")
        fields = value.split()
        if key == "MemTotal" and fields and fields[0].isdigit():
            return int(fields[0]) * 1024
    return None


TOOLCHAIN_COMMANDS = {"rustc": ["rustc", "--version"], "go": ["go", "version"]}


def toolchains() -> dict[str, str]:
    """The version line of each compiler found on PATH (`rustc`, `go`)."""
    found = {}
    for name, done in zip(
        TOOLCHAIN_COMMANDS, run_together(TOOLCHAIN_COMMANDS.values()), strict=True
    ):
        if done is not None and done.returncode == 0 and done.stdout.strip():
            found[name] = done.stdout.strip().splitlines()[0]
    return found


def run_together(
    commands: Iterable[Sequence[str]], timeout_s: float = 30
) -> list[subprocess.CompletedProcess[str] | None]:
    """Each command's output, the commands started at once rather than one after the other
    (each a process start, tens of ms before a run's first repeat); None for one that could
    not start or did not finish in `timeout_s`. Their outputs are read one after the other:
    a command whose pipe is full waits for its turn, and none waits for another."""
    started: list[subprocess.Popen[str] | None] = []
    for argv in commands:
        try:
            started.append(
                subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            )
        except OSError:
            started.append(None)
    return [_finished(process, timeout_s) for process in started]


def _finished(
    process: subprocess.Popen[str] | None, timeout_s: float
) -> subprocess.CompletedProcess[str] | None:
    if process is None:
        return None
    with process:
        try:
            out, err = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            return None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def collect_host(root: Path = Path("/")) -> dict[str, Any]:
    """hostname, kernel, cpu_model, logical_cpus, governor, smt, isolated_cpus, turbo,
    memory_bytes; toolchains too on the live machine."""
    uname = os.uname()
    live = root == Path("/")
    return {
        "hostname": read_text(root, "proc/sys/kernel/hostname")
        or (uname.nodename if live else None),
        "kernel": read_text(root, "proc/sys/kernel/osrelease") or (uname.release if live else None),
        "cpu_model": cpu_model(root),
        "logical_cpus": logical_cpus(root),
        "governor": governor(root),
        "smt": smt_active(root),
        "isolated_cpus": isolated_cpus(root),
        "turbo": turbo_enabled(root),
        "memory_bytes": memory_bytes(root),
    } | ({"toolchains": toolchains()} if live else {})


def _git(repo: Path, *args: str) -> list[str]:
    # A checkout owned by another user (a root-built one run by a user) is 'dubious' to git,
    # which then answers nothing: the harness only reads it, so it trusts this one folder.
    return ["git", "-c", f"safe.directory={repo.resolve()}", "-C", str(repo), *args]


def git_info(repo: Path) -> dict[str, Any]:
    """{commit, dirty}: HEAD's full hash (None outside a checkout or before the first commit)
    and whether tracked or untracked-but-not-ignored files differ from it (None when unknown)."""
    head, status = run_together(
        [
            _git(repo, "rev-parse", "--verify", "--quiet", "HEAD"),
            _git(repo, "status", "--porcelain"),
        ]
    )
    commit = head.stdout.strip() if head and head.returncode == 0 else None
    dirty = bool(status.stdout.strip()) if status and status.returncode == 0 else None
    return {"commit": commit or None, "dirty": dirty}


def suite_source(folder: Path) -> dict[str, Any]:
    """{folder, commit, dirty}: the suite's folder and git_info of the git working tree it is
    in (found by its .git, so that a repository of another owner is trusted at its root);
    commit and dirty None outside one."""
    folder = folder.resolve()
    root = next((p for p in (folder, *folder.parents) if (p / ".git").exists()), None)
    checkout = git_info(root) if root is not None else {"commit": None, "dirty": None}
    return {"folder": str(folder), **checkout}


# What a run.json records of where it ran: git_info, collect_host, suite_source.
RunFacts = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def gather(repo: Path, folder: Path) -> RunFacts:
    """git_info(repo), collect_host() and suite_source(folder), asked at once: each waits on
    other programs (git, rustc, go), one after the other a tenth of a second before a run's
    first repeat."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        git = pool.submit(git_info, repo)
        host = pool.submit(collect_host)
        source = pool.submit(suite_source, folder)
        return git.result(), host.result(), source.result()


def gather_soon(repo: Path, folder: Path) -> Future[RunFacts]:
    """gather(repo, folder) begun in a thread: the caller goes on (imports the run pipeline,
    checks the cells) while git, rustc and go answer."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(gather, repo, folder)
    finally:
        pool.shutdown(wait=False)  # its thread ends with the task
