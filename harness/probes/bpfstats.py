"""The BPF probes' own cost over the measured window, from the kernel's BPF run-time
statistics: `run_cnt` and `run_time_ns` of every program a probe process holds.

The statistics are on while the session holds the fd of the `BPF_ENABLE_STATS` command (the
kernel counts for every BPF program then, adding ~20 ns to each run; nothing is changed
system-wide after the fd is closed, unlike the sysctl kernel.bpf_stats_enabled). A probe's
programs are the `anon_inode:bpf-prog` fds of its process (a libbpf collector, bpftrace);
their counters are read from /proc/PID/fdinfo at measure_start, before the probes' windows
open, and at measure_end, before they close: the difference is the window's cost.

`cpu_share` is run_time_ns / (window_ns x online CPUs): the share of the machine's CPU time
the probe's programs took (the programs run on every CPU, in whichever task triggered them).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.format.numbers import DASH, human, percent

BPF_ENABLE_STATS = 32  # enum bpf_cmd
BPF_STATS_RUN_TIME = 0
SYS_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351}
BPFTOOL_TIMEOUT_S = 10.0


def enable_stats() -> tuple[int | None, str | None]:
    """(fd that keeps the statistics on, None) or (None, why not)."""
    number = SYS_BPF.get(platform.machine())
    if number is None:
        return None, f"no bpf(2) syscall number known for {platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint64 * 2)(BPF_STATS_RUN_TIME, 0)
    fd = int(libc.syscall(number, BPF_ENABLE_STATS, ctypes.byref(attr), ctypes.sizeof(attr)))
    if fd < 0:
        return None, f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}"
    return fd, None


def prog_counters(pid: int) -> dict[int, tuple[int, int]]:
    """{prog id: (run_cnt, run_time_ns)} of the BPF programs process `pid` holds."""
    out: dict[int, tuple[int, int]] = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                fields = dict(line.split(":", 1) for line in info if ":" in line)
        except OSError:
            continue
        with contextlib.suppress(KeyError, ValueError):
            prog = int(fields["prog_id"])
            out[prog] = (int(fields.get("run_cnt", 0)), int(fields.get("run_time_ns", 0)))
    return out


def _counters(pids: Sequence[int]) -> dict[int, tuple[int, int]]:
    return {prog: counts for pid in pids for prog, counts in prog_counters(pid).items()}


def prog_names(ids: Iterable[int]) -> dict[int, str]:
    """Names of the programs by id (`bpftool prog show`); missing ones are left out."""
    wanted = set(ids)
    bpftool = shutil.which("bpftool")
    if not wanted or bpftool is None:
        return {}
    try:
        shown = subprocess.run(
            [bpftool, "-j", "prog", "show"],
            capture_output=True,
            timeout=BPFTOOL_TIMEOUT_S,
            check=False,
        )
        progs = json.loads(shown.stdout or b"[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    return {
        int(p["id"]): str(p.get("name") or p.get("type"))
        for p in progs
        if isinstance(p, dict) and p.get("id") in wanted
    }


def online_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def figures(run_cnt: int, run_time_ns: int, window_ns: int, cpus: int) -> dict[str, Any]:
    return {
        "run_cnt": run_cnt,
        "run_time_ns": run_time_ns,
        "ns_per_run": run_time_ns / run_cnt if run_cnt else None,
        "cpu_share": run_time_ns / (window_ns * cpus) if window_ns and cpus else None,
    }


@dataclass
class _Watched:
    pids: Sequence[int]
    start: dict[int, tuple[int, int]] = field(default_factory=dict)
    end: dict[int, tuple[int, int]] = field(default_factory=dict)


class BpfStatsWatch:
    """Run-time statistics of the probe processes over one window (a ProbeSession's)."""

    def __init__(self, probe_pids: Mapping[str, Sequence[int]]) -> None:
        """probe_pids: per probe, the processes holding its programs."""
        self.watched = {name: _Watched(pids) for name, pids in probe_pids.items()}
        self.fd, self.unavailable = enable_stats() if probe_pids else (None, None)
        self.names: dict[int, str] = {}
        self.cpus = online_cpus()
        self.started_ns = self.ended_ns = 0

    def attached(self) -> None:
        """After the probes attached: their programs' names."""
        if self.fd is None:
            return
        ids = [i for w in self.watched.values() for i in _counters(w.pids)]
        self.names = prog_names(ids)

    def window_start(self) -> None:
        if self.fd is None:
            return
        for w in self.watched.values():
            w.start = _counters(w.pids)
        self.started_ns = time.monotonic_ns()

    def window_end(self) -> None:
        if self.fd is None or not self.started_ns:
            return
        self.ended_ns = time.monotonic_ns()
        for w in self.watched.values():
            w.end = _counters(w.pids)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def result(self, name: str) -> dict[str, Any] | None:
        """The probe's `bpf_stats` over the window; None when it holds no BPF program."""
        w = self.watched.get(name)
        if w is None:
            return None
        if self.unavailable is not None:
            return {"unavailable": self.unavailable}
        if not self.ended_ns or not w.end:
            return None
        window_ns = self.ended_ns - self.started_ns
        programs: list[dict[str, Any]] = []
        for prog, (cnt, ns) in sorted(w.end.items()):
            cnt0, ns0 = w.start.get(prog, (0, 0))
            programs.append(
                {
                    "id": prog,
                    "name": self.names.get(prog, f"prog {prog}"),
                    "run_cnt": cnt - cnt0,
                    "run_time_ns": ns - ns0,
                }
            )
        run_cnt = sum(p["run_cnt"] for p in programs)
        run_ns = sum(p["run_time_ns"] for p in programs)
        return {
            "window_ns": window_ns,
            "cpus": self.cpus,
            **figures(run_cnt, run_ns, window_ns, self.cpus),
            "programs": programs,
        }


def repeat_share(stats: Iterable[Mapping[str, Any] | None]) -> dict[str, float]:
    """A repeat's `bpf_cpu_share` from its probes' `bpf_stats` (None: no BPF program): the
    share of the machine's CPU its BPF programs took over the window, 0 without any; nothing
    when a probe's statistics are missing (BPF_ENABLE_STATS refused)."""
    shares = [s.get("cpu_share") for s in stats if s is not None]
    known = [float(share) for share in shares if share is not None]
    return {"bpf_cpu_share": float(sum(known))} if len(known) == len(shares) else {}


def add_up(repeats: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A probe's `bpf_stats` over a cell's repeats: counts and windows summed."""
    done = [r for r in repeats if "run_cnt" in r]
    if not done:
        return None
    run_cnt = sum(int(r["run_cnt"]) for r in done)
    run_ns = sum(int(r["run_time_ns"]) for r in done)
    window_ns = sum(int(r["window_ns"]) for r in done)
    cpus = int(done[-1]["cpus"])
    return {"window_ns": window_ns, "cpus": cpus, **figures(run_cnt, run_ns, window_ns, cpus)}


def run_costs(cells: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per probe over every cell of a run (run.json's dicts): its `bpf_stats` added up."""
    per_probe: dict[str, list[Mapping[str, Any]]] = {}
    for cell in cells:
        for name, probe in (cell.get("probes") or {}).items():
            cost = probe.get("bpf_stats") or {}
            if "run_cnt" in cost:
                per_probe.setdefault(name, []).append(cost)
    return {name: total for name, costs in per_probe.items() if (total := add_up(costs))}


def footer(cells: Sequence[Mapping[str, Any]]) -> str | None:
    """The table footer's line: ns per event and CPU share of each BPF probe."""
    costs = run_costs(cells)
    if not costs:
        return None
    cpus = next(iter(costs.values()))["cpus"]
    parts = []
    for name, cost in costs.items():
        per_run = cost.get("ns_per_run")
        share = cost.get("cpu_share")
        parts.append(
            f"{name} {human(per_run, time_ns=True) if per_run is not None else DASH}/event"
            f", {percent(share) if share is not None else DASH} CPU"
            f" ({human(float(cost['run_cnt']))} events)"
        )
    return (
        "BPF probes' own cost (kernel BPF statistics over the measured windows; CPU = run "
        f"time / (window x {cpus} CPUs)): " + "; ".join(parts)
    )
