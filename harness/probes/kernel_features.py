"""What the collectors need from the kernel, checked on this machine (`harness doctor`).

Each feature is found where the kernel shows it, not guessed from the version where it can be
seen: the BTF of the kernel for the BTF tracepoints, the helpers' functions in /proc/kallsyms,
the uprobe PMU in sysfs. Only BPF atomics (Linux 5.12) show nowhere without loading a program,
and go by the kernel's version. The collectors check the same at load and say what they lack
(bpf/README.md); the oldest kernel with every feature is OLDEST.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness import hostinfo

OLDEST = "5.15"  # the oldest kernel every collector loads on: bpf_task_pt_regs()
KERNEL_BTF = "sys/kernel/btf/vmlinux"


@dataclass(frozen=True)
class Feature:
    name: str
    since: str  # the Linux version that brought it
    what: str


BTF = Feature("btf", "5.4", "kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF=y)")
ATOMICS = Feature("atomics", "5.12", "BPF atomic and/or, for the target set")
TP_BTF = Feature("tp_btf", "5.5", "BTF tracepoints (tp_btf) on sched_switch and sched_waking")
USER_STACKS = Feature(
    "user_stacks", "5.15", "bpf_get_current_task_btf() and bpf_task_pt_regs(), for user stacks"
)
UPROBES = Feature("uprobes", "3.5", "uprobes (CONFIG_UPROBE_EVENTS), for the Go runtime")
FEATURES = (BTF, ATOMICS, TP_BTF, USER_STACKS, UPROBES)


@dataclass(frozen=True)
class Need:
    feature: Feature
    without: str | None = None  # what the collector does without it; None: it cannot run


# What each collector needs; `without` says how it gets by when it has a fallback.
NEEDS: dict[str, tuple[Need, ...]] = {
    "sched": (Need(BTF), Need(ATOMICS), Need(TP_BTF, "attaches to raw tracepoints instead")),
    "futex": (Need(BTF), Need(ATOMICS), Need(USER_STACKS, "counts waits without stacks")),
    "offwake": (Need(BTF), Need(ATOMICS), Need(TP_BTF), Need(USER_STACKS)),
    "gc": (Need(BTF), Need(ATOMICS), Need(UPROBES)),
}


def version(root: Path) -> tuple[int, int] | None:
    release = hostinfo.read_text(root, "proc/sys/kernel/osrelease") or ""
    match = re.match(r"(\d+)\.(\d+)", release.strip())
    return (int(match[1]), int(match[2])) if match else None


def _at_least(root: Path, since: str) -> bool:
    have = version(root)
    major, minor = (int(part) for part in since.split("."))
    return have is not None and have >= (major, minor)


def _kernel_btf_has(root: Path, *names: str) -> bool:
    try:
        btf = (root / KERNEL_BTF).read_bytes()
    except OSError:
        return False
    return all(f"\0{name}\0".encode() in btf for name in names)


def _kallsyms_has(root: Path, *symbols: str) -> bool:
    text = hostinfo.read_text(root, "proc/kallsyms") or ""
    return all(re.search(rf" {symbol}$", text, re.M) for symbol in symbols)


@cache  # a kernel's features do not change while it runs; each collector asks for several
def present(feature: Feature, root: Path) -> bool:
    """Whether the kernel at `root` has the feature."""
    if feature is BTF:
        return (root / KERNEL_BTF).exists()
    if feature is ATOMICS:
        return _at_least(root, feature.since)
    if feature is TP_BTF:
        return _kernel_btf_has(root, "btf_trace_sched_switch", "btf_trace_sched_waking")
    if feature is USER_STACKS:
        return _kallsyms_has(root, "bpf_task_pt_regs", "bpf_get_current_task_btf")
    if feature is UPROBES:
        return (root / "sys/bus/event_source/devices/uprobe/type").exists()
    raise ValueError(feature.name)


def missing(collector: str, root: Path) -> tuple[list[str], list[str]]:
    """(why the collector cannot run here, what it does without a feature it lacks)."""
    fatal, degraded = [], []
    for need in NEEDS.get(collector, ()):
        if present(need.feature, root):
            continue
        lacks = f"the kernel lacks {need.feature.what} (Linux {need.feature.since})"
        if need.without is None:
            fatal.append(lacks)
        else:
            degraded.append(f"{lacks}: it {need.without}")
    return fatal, degraded
