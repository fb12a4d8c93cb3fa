"""CPU placement: `--cpuset ROLE=CPUS` pins each role of the workload to its CPUs.

Roles are the processes of the workload's `ready` event, by position: the describe's `roles`
when it declares them (one name per pid), else `client` for the first pid (the measured
client, docs/workload-contract.md) and `server` for every other. The harness pins them
itself when `ready` arrives, before the gate opens and so before the warm-up: every thread
of each of the role's processes (`sched_setaffinity` on each tid in /proc/PID/task); threads
created later inherit their creator's CPUs. No workload needs to know. `make bench` (harness
bench) splits the machine in halves, client first, on machines with 8 CPUs or more.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from harness.errors import BadInput

CLIENT, SERVER = "client", "server"
DEFAULT_ROLES = (CLIENT, SERVER)
AUTO_MIN_CPUS = 8
Cpuset = dict[str, list[int]]


def online_cpus() -> list[int]:
    """The CPUs this process may run on (the online ones, less any affinity it was given)."""
    return sorted(os.sched_getaffinity(0))


def parse_cpus(text: str) -> list[int]:
    """`0-3,8,10-11` -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        low, sep, high = part.partition("-")
        try:
            first, last = int(low), int(high) if sep else int(low)
        except ValueError:
            raise BadInput(f"--cpuset: '{text}' is not a CPU list like 0-3,8") from None
        if first < 0 or last < first:
            raise BadInput(f"--cpuset: '{part}' is not a CPU range (low-high, low <= high)")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def cpu_text(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8] -> `0-3,8`."""
    parts: list[str] = []
    run: list[int] = []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(parts)


def parse_cpuset(values: Sequence[str], roles: Sequence[str], online: Sequence[int]) -> Cpuset:
    """`--cpuset` values (`client=0-15,server=16-31`, or one ROLE=CPUS each) checked against
    the workload's roles and the online CPUs."""
    cpuset: Cpuset = {}
    for value in values:
        # A comma also separates CPUs: a new role starts at a word with `=`.
        items: list[str] = []
        for word in value.split(","):
            if "=" in word or not items:
                items.append(word)
            else:
                items[-1] += "," + word
        for item in items:
            role, sep, cpus = item.partition("=")
            role = role.strip()
            if not sep or not role or not cpus.strip():
                raise BadInput(
                    f"--cpuset {value!r}: expected ROLE=CPUS, e.g. client=0-3,server=4-7"
                )
            if role not in roles:
                raise BadInput(f"--cpuset: unknown role '{role}' (roles: {', '.join(roles)})")
            chosen = parse_cpus(cpus)
            outside = sorted(set(chosen) - set(online))
            if outside:
                raise BadInput(
                    f"--cpuset {role}={cpus}: CPU {cpu_text(outside)} not online here "
                    f"(online: {cpu_text(online)})"
                )
            cpuset[role] = chosen
    return cpuset


def auto_split(online: Sequence[int]) -> Cpuset | None:
    """`make bench`'s default on machines with AUTO_MIN_CPUS or more: client on the first
    half, server on the second."""
    if len(online) < AUTO_MIN_CPUS:
        return None
    half = len(online) // 2
    return {CLIENT: list(online[:half]), SERVER: list(online[half:])}


def roles_of(description: Any) -> tuple[str, ...]:
    """The workload's roles: its describe's `roles` if it declares them, else the default."""
    declared = getattr(description, "roles", None)
    return tuple(declared) if declared else DEFAULT_ROLES


def role_pids(pids: Sequence[int], roles: Sequence[str]) -> dict[str, list[int]]:
    """The ready event's pids by role: by position; the last role takes the rest."""
    out: dict[str, list[int]] = {}
    for i, pid in enumerate(pids):
        role = roles[min(i, len(roles) - 1)]
        out.setdefault(role, []).append(pid)
    return out


def pin(pid: int, cpus: Sequence[int]) -> None:
    """Every thread of the process onto the CPUs (threads that exit meanwhile are skipped)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            continue


def header(cpuset: Mapping[str, Sequence[int]] | None) -> str | None:
    """`cpuset client=0-15 server=16-31` for the table's header."""
    if not cpuset:
        return None
    return "cpuset " + " ".join(f"{role}={cpu_text(cpus)}" for role, cpus in cpuset.items())


class Hooks(Protocol):
    def on_ready(self, pids: list[int]) -> None: ...

    def on_measure_start(self) -> None: ...

    def on_measure_end(self) -> None: ...


class PinningHooks:
    """The hooks of one repeat with CPU placement: pins at `ready`, then the probes' hooks."""

    def __init__(
        self,
        cpuset: Mapping[str, Sequence[int]],
        roles: Sequence[str],
        inner: Hooks | None,
        every_role: bool = False,
    ) -> None:
        self.cpuset = cpuset
        self.roles = roles
        self.inner = inner
        self.every_role = every_role  # pin only when each role of the cpuset has a process

    def on_ready(self, pids: list[int]) -> None:
        by_role = role_pids(pids, self.roles)
        if self.every_role and not set(self.cpuset) <= set(by_role):
            by_role = {}
        for role, members in by_role.items():
            cpus = self.cpuset.get(role)
            if cpus:
                for pid in members:
                    pin(pid, cpus)
        if self.inner is not None:
            self.inner.on_ready(pids)

    def on_measure_start(self) -> None:
        if self.inner is not None:
            self.inner.on_measure_start()

    def on_measure_end(self) -> None:
        if self.inner is not None:
            self.inner.on_measure_end()


def hooks(plan: Any, inner: Any) -> Any:
    """The repeat's hooks: the probe session, wrapped to pin first when the plan has a
    cpuset. The automatic split pins only a workload whose ready event has every role."""
    if not plan.cpuset:
        return inner
    return PinningHooks(plan.cpuset, roles_of(plan.description), inner, plan.cpuset_auto)
