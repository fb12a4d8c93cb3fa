"""`harness doctor`: what this machine allows (probes, profiling) and what makes it noisy.

Each check says ok / warn / missing and, when not ok, what to change. It is advice: the
command exits 0 unless a check itself crashed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness import hostinfo, jvm
from harness.checks import BTF_FIX, PRIVILEGE_FIX, TRACEFS_FIX, Check
from harness.probes import kernel_features, registry
from harness.probes.availability import effective_caps, held_caps
from harness.stability import ADVICE

STATUS_STYLES = {"ok": "green", "warn": "yellow", "missing": "red", "error": "bold red"}


def _run_tool(path: str, args: tuple[str, ...]) -> tuple[bool, str]:
    """(whether it ran, first line of its output or why it did not).

    Debian/Ubuntu ship `perf` and `bpftool` as wrappers that fail when the package for the
    running kernel is missing, so being on PATH is not enough: the tool has to run.
    """
    try:
        done = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"fails to run: {error}"
    # Colour codes out (Maven 3.8 colours its --version even in batch mode).
    lines = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout or done.stderr).strip().splitlines()
    first = lines[0] if lines else ""
    if done.returncode != 0:
        return False, f"fails to run (exit {done.returncode}): {first}"
    return True, first


def _tool(name: str, args: tuple[str, ...], purpose: str, install: str) -> Check:
    path = shutil.which(name)
    if path is None:
        return Check(name, "missing", f"not on PATH; needed {purpose}", install)
    runs, output = _run_tool(path, args)
    if not runs:
        return Check(name, "warn", f"{path} {output}", install)
    return Check(name, "ok", f"{path}: {output}")


def check_privileges(root: Path) -> Check:
    caps = effective_caps(root)
    who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    fix = PRIVILEGE_FIX
    if caps is None:
        return Check("privileges", "warn", f"{who}; CapEff not readable", fix)
    has = held_caps(caps)
    if {"CAP_BPF", "CAP_PERFMON"} <= has or "CAP_SYS_ADMIN" in has:
        return Check("privileges", "ok", f"{who}; effective: {', '.join(sorted(has))}")
    detail = f"{who}; lacks CAP_BPF+CAP_PERFMON and CAP_SYS_ADMIN: eBPF probes unavailable"
    return Check("privileges", "missing", detail, fix)


def check_btf(root: Path) -> Check:
    if (root / "sys/kernel/btf/vmlinux").exists():
        return Check("btf", "ok", "/sys/kernel/btf/vmlinux present: CO-RE probes can load")
    return Check(
        "btf",
        "missing",
        "no /sys/kernel/btf/vmlinux: CO-RE (libbpf) probes cannot load; bpftrace still may",
        BTF_FIX,
    )


def check_kernel(root: Path) -> Check:
    """The kernel against the oldest the probes support, and each feature they use."""
    have = kernel_features.version(root)
    release = hostinfo.read_text(root, "proc/sys/kernel/osrelease") or "unknown"
    absent = [f for f in kernel_features.FEATURES if not kernel_features.present(f, root)]
    features = ", ".join(
        f"{f.name} {'missing' if f in absent else 'ok'} ({f.since})"
        for f in kernel_features.FEATURES
    )
    detail = f"{release}; probes support >= {kernel_features.OLDEST}; {features}"
    fix = f"a kernel >= {kernel_features.OLDEST} with CONFIG_DEBUG_INFO_BTF=y and uprobes"
    if have is None or absent:
        return Check("kernel", "missing" if kernel_features.BTF in absent else "warn", detail, fix)
    return Check("kernel", "ok", detail)


def check_paranoid(root: Path) -> Check:
    value = hostinfo.read_text(root, "proc/sys/kernel/perf_event_paranoid")
    fix = "sysctl -w kernel.perf_event_paranoid=-1 (add to /etc/sysctl.d/ to keep it)"
    if value is None:
        return Check("perf_event_paranoid", "missing", "not readable: no perf events?", fix)
    level = int(value)
    if level <= -1:
        return Check("perf_event_paranoid", "ok", f"{level}: no restrictions")
    if level <= 1:
        return Check("perf_event_paranoid", "ok", f"{level}: other processes can be profiled", fix)
    privileged = check_privileges(root).status == "ok"
    detail = f"{level}: unprivileged users cannot profile other processes or the kernel"
    if privileged:
        return Check("perf_event_paranoid", "ok", detail + " (this user is privileged)", fix)
    return Check("perf_event_paranoid", "warn", detail, fix)


def check_governor(root: Path) -> Check:
    governor = hostinfo.governor(root)
    if governor == "performance":
        return Check("governor", "ok", "performance")
    fix = "cpupower frequency-set -g performance (or pyperf system tune)"
    if governor == "unknown":
        detail = "not exposed (no cpufreq; typical of VMs): clock speed is not under control"
        return Check("governor", "warn", detail, "run on bare metal for stable clocks")
    return Check("governor", "warn", f"{governor}: clock speed follows load, adding noise", fix)


def check_turbo(root: Path) -> Check:
    turbo = hostinfo.turbo_enabled(root)
    if turbo is False:
        return Check("turbo", "ok", "off: clock speed does not depend on temperature or load")
    fix = (
        "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo "
        "(or echo 0 > /sys/devices/system/cpu/cpufreq/boost)"
    )
    if turbo is None:
        return Check(
            "turbo",
            "warn",
            "state not exposed (no intel_pstate or cpufreq boost; typical of VMs)",
            "disable turbo/boost in the BIOS or on the host for stable clocks",
        )
    return Check("turbo", "warn", "on: clock speed varies with temperature and load", fix)


def check_smt(root: Path) -> Check:
    smt = hostinfo.smt_active(root)
    if smt is None:
        return Check(
            "smt",
            "warn",
            "state not exposed (/sys/devices/system/cpu/smt missing)",
            "see `lscpu` (threads per core) to know whether cores are shared",
        )
    if smt:
        return Check(
            "smt",
            "ok",
            "on: sibling threads share a core; results hold for SMT-on machines only",
            "to compare with SMT off: echo off > /sys/devices/system/cpu/smt/control",
        )
    return Check("smt", "ok", "off or not supported: one thread per core")


def check_isolated(root: Path) -> Check:
    cpus = hostinfo.isolated_cpus(root)
    fix = (
        "boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> and keep IRQs off them "
        "(pyperf system tune style) for quiet runs"
    )
    if cpus is None:
        return Check("isolated_cpus", "warn", "not exposed", fix)
    if not cpus:
        return Check("isolated_cpus", "warn", "none: benchmarks share CPUs with the system", fix)
    return Check("isolated_cpus", "ok", f"{len(cpus)} isolated: {hostinfo.format_cpulist(cpus)}")


def check_background_load(root: Path) -> Check:
    """Other work on the machine: the 1-minute load average against the CPUs. What the run
    tables' "unstable" notes (harness/stability.py) most often come from on a shared box."""
    fix = "stop background jobs (builds, other benchmarks) or run on a quiet CPU set"
    try:
        load = float((root / "proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return Check("background_load", "warn", "/proc/loadavg not readable", fix)
    cpus = os.cpu_count() or 1
    detail = f"load average {load:.2f} over {cpus} CPUs"
    if load > 0.5 * cpus:
        return Check("background_load", "warn", detail + ": repeats will spread and drift", fix)
    return Check("background_load", "ok", detail)


def check_tracefs(root: Path) -> Check:
    mounts = hostinfo.read_text(root, "proc/mounts") or ""
    points = [line.split()[1] for line in mounts.splitlines() if line.split()[2:3] == ["tracefs"]]
    if points:
        return Check("tracefs", "ok", f"mounted at {', '.join(points)}")
    return Check(
        "tracefs",
        "missing",
        "not mounted: bpftrace tracepoint listing and perf tracepoints need it",
        TRACEFS_FIX,
    )


def _tool_check(
    name: str, args: tuple[str, ...], purpose: str, install: str
) -> Callable[[Path], Check]:
    return lambda _root: _tool(name, args, purpose, install)


LINUX_TOOLS = "linux-tools-$(uname -r) (Ubuntu)"
CHECKS: list[tuple[str, Callable[[Path], Check]]] = [
    ("privileges", check_privileges),
    ("btf", check_btf),
    ("kernel", check_kernel),
    (
        "perf",
        _tool_check(
            "perf",
            ("--version",),
            "for on-CPU profiles and flame graphs",
            f"apt install linux-perf (Debian) or {LINUX_TOOLS}",
        ),
    ),
    ("perf_event_paranoid", check_paranoid),
    (
        "bpftrace",
        _tool_check("bpftrace", ("--version",), "for bpf/*.bt probes", "apt install bpftrace"),
    ),
    (
        "bpftool",
        _tool_check(
            "bpftool",
            ("version",),
            "to generate BPF skeletons",
            f"apt install bpftool (Debian) or {LINUX_TOOLS}",
        ),
    ),
    (
        "clang",
        _tool_check(
            "clang",
            ("--version",),
            "to build the *.bpf.c collectors",
            "apt install clang llvm libbpf-dev",
        ),
    ),
    ("governor", check_governor),
    ("turbo", check_turbo),
    ("smt", check_smt),
    ("isolated_cpus", check_isolated),
    ("background_load", check_background_load),
    ("fio", _tool_check("fio", ("--version",), "for the fio suite", "apt install fio")),
    (
        "java",
        _tool_check(
            "java", ("-version",), "for the lettuce suite", "apt install openjdk-17-jdk-headless"
        ),
    ),
    (
        "mvn",
        _tool_check(
            "mvn",
            ("-Dstyle.color=never", "--version"),
            "to build the lettuce suite",
            "apt install maven",
        ),
    ),
    (
        "redis-server",
        _tool_check(
            "redis-server", ("--version",), "for the lettuce suite", "apt install redis-server"
        ),
    ),
    ("jvm usdt", jvm.check_usdt),
    ("tracefs", check_tracefs),
    *((f"probe {kind.name}", kind.check) for kind in registry.KINDS),
]


# The checks whose warnings add noise to the figures.
NOISE_CHECKS = ("governor", "turbo", "smt", "isolated_cpus", "background_load")


def run_checks(root: Path = Path("/")) -> list[Check]:
    """Every check; one that crashes is reported with status `error` and the others still run."""
    results = []
    for name, check in CHECKS:
        try:
            results.append(check(root))
        except Exception as error:  # report and go on: one broken check must not hide the rest
            results.append(Check(name, "error", f"{type(error).__name__}: {error}"))
    return results


def doctor_command(console: Console, as_json: bool) -> int:
    checks = run_checks()
    if as_json:
        console.out(json.dumps([asdict(c) for c in checks], indent=2), highlight=False)
    else:
        table = Table(title="harness doctor", title_justify="left")
        table.add_column("check", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("detail")
        table.add_column("fix")
        for c in checks:
            table.add_row(c.check, Text(c.status, style=STATUS_STYLES[c.status]), c.detail, c.fix)
        console.print(table)
        noisy = [c.check for c in checks if c.check in NOISE_CHECKS and c.status != "ok"]
        if noisy:
            console.print(
                f"noise: {', '.join(noisy)} above make repeats spread, split or drift (the "
                f"'unstable' notes of a run's table); to quiet them: {ADVICE}"
            )
        counts = {s: sum(c.status == s for c in checks) for s in STATUS_STYLES}
        console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return 1 if any(c.status == "error" for c in checks) else 0
