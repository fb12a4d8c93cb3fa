"""Whether each probe can run on this machine, and in one line why not."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from harness import hostinfo
from harness.checks import BTF_FIX, PRIVILEGE_FIX, Check
from harness.paths import REPO_ROOT
from harness.probes import kernel_features

# Capability bit numbers from linux/capability.h.
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
CAP_BPF = 39
CAPS = {"CAP_SYS_ADMIN": CAP_SYS_ADMIN, "CAP_PERFMON": CAP_PERFMON, "CAP_BPF": CAP_BPF}
BTF = "sys/kernel/btf/vmlinux"
BUILD_HINT = "make -C bpf"


def collector_dir() -> Path:
    """Folder of the built collectors (env HARNESS_BPF_BUILD, default <repo>/bpf/build)."""
    return Path(os.environ.get("HARNESS_BPF_BUILD") or REPO_ROOT / "bpf" / "build")


def collector_binary(name: str) -> Path:
    return collector_dir() / name


def effective_caps(root: Path) -> int | None:
    status = hostinfo.read_text(root, "proc/self/status") or ""
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return None


def held_caps(caps: int) -> set[str]:
    return {name for name, bit in CAPS.items() if caps >> bit & 1}


def privilege_problem(root: Path = Path("/")) -> str | None:
    """None when this process may load BPF programs (CAP_BPF+CAP_PERFMON, or CAP_SYS_ADMIN)."""
    caps = effective_caps(root)
    if caps is None:
        return "cannot read this process's capabilities (CapEff in /proc/self/status)"
    held = held_caps(caps)
    if {"CAP_BPF", "CAP_PERFMON"} <= held or "CAP_SYS_ADMIN" in held:
        return None
    return "needs root, or CAP_BPF and CAP_PERFMON"


def btf_problem(root: Path = Path("/")) -> str | None:
    if (root / BTF).exists():
        return None
    return f"the kernel has no BTF (/{BTF}), which CO-RE collectors need"


def tracefs_mounted(root: Path = Path("/")) -> bool:
    mounts = hostinfo.read_text(root, "proc/mounts") or ""
    return any(line.split()[2:3] == ["tracefs"] for line in mounts.splitlines())


def collector_problem(name: str, root: Path = Path("/")) -> str | None:
    binary = collector_binary(name)
    if not binary.is_file():
        return f"collector {binary} is not built (run `{BUILD_HINT}`)"
    if not os.access(binary, os.X_OK):
        return f"collector {binary} is not executable"
    return privilege_problem(root) or btf_problem(root)


def bpftrace_problem(root: Path = Path("/")) -> str | None:
    if shutil.which("bpftrace") is None:
        return "bpftrace is not installed (apt install bpftrace)"
    return privilege_problem(root)


PARANOID = "proc/sys/kernel/perf_event_paranoid"


def perf_paranoid(root: Path = Path("/")) -> int | None:
    text = hostinfo.read_text(root, PARANOID)
    try:
        return int(text.strip()) if text else None
    except ValueError:
        return None


def perf_privileged(root: Path = Path("/")) -> bool:
    caps = effective_caps(root)
    return caps is not None and bool({"CAP_PERFMON", "CAP_SYS_ADMIN"} & held_caps(caps))


def perf_problem(root: Path = Path("/")) -> str | None:
    """Sampling another process's stacks needs perf and CAP_PERFMON, or perf_event_paranoid
    <= 2 (user-space frames only at 2)."""
    if shutil.which("perf") is None:
        return "perf is not installed (apt install linux-perf)"
    if perf_privileged(root):
        return None
    level = perf_paranoid(root)
    if level is None or level > 2:
        return (
            f"needs root or CAP_PERFMON (kernel.perf_event_paranoid is {level}; "
            "sysctl kernel.perf_event_paranoid=2 allows user-space profiles)"
        )
    return None


def perf_user_only(root: Path = Path("/")) -> bool:
    """Kernel frames are not permitted: sample user space only."""
    level = perf_paranoid(root)
    return not perf_privileged(root) and (level is None or level > 1)


def collector_check(name: str, root: Path) -> Check:
    """`harness doctor`'s line for a collector: built, privileged, kernel BTF, and the kernel
    features it needs (kernel_features.NEEDS)."""
    check = f"probe {name}"
    binary = collector_binary(name)
    problem = collector_problem(name, root)
    if problem is None:
        fatal, degraded = kernel_features.missing(name, root)
        upgrade = f"a kernel >= {kernel_features.OLDEST} has every feature the probes use"
        if fatal:
            return Check(check, "missing", "; ".join(fatal), upgrade)
        if degraded:
            return Check(check, "warn", "; ".join(degraded), upgrade)
        return Check(check, "ok", f"works: {binary} built, BPF allowed, kernel BTF present")
    if privilege_problem(root):
        fix = PRIVILEGE_FIX
    elif btf_problem(root):
        fix = BTF_FIX
    else:
        fix = BUILD_HINT
    return Check(check, "missing", problem, fix)
