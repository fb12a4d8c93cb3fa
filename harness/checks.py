"""One line of `harness doctor`: what was checked, its status and what to do about it."""

from __future__ import annotations

from dataclasses import dataclass

PRIVILEGE_FIX = "run as root (sudo), or give the harness CAP_BPF and CAP_PERFMON (kernel >= 5.8)"
BTF_FIX = "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (all current distro kernels are)"
TRACEFS_FIX = "mount -t tracefs nodev /sys/kernel/tracing"


@dataclass(frozen=True)
class Check:
    check: str
    status: str  # ok | warn | missing (| error when the check itself crashed)
    detail: str
    fix: str = ""
