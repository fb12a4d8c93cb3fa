"""What every probe driver offers the session, and what it hands back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.base.stop import StopFlag
from harness.probes.drivers.process import ProbeProcess

ATTACH_TIMEOUT_S = 20.0  # loading and attaching; bpftrace compiles first
FINISH_TIMEOUT_S = 30.0  # detaching, resolving stacks and writing the output


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: a kind of the registry by its name (`sched`), or a bpftrace script
    (`bt:<stem>`)."""

    name: str
    script: Path | None = None  # absolute path of a bpftrace script
    # Named in --probes itself, not through `all` or the default: its note when it does not
    # apply to the workload's processes is shown.
    named: bool = field(default=False, compare=False)

    @property
    def is_bpftrace(self) -> bool:
        return self.script is not None

    @property
    def file_stem(self) -> str:
        """For raw file names: `sched`, `bt-syscalls_per_op`."""
        return self.name.replace(":", "-")


@dataclass
class ProbeResult:
    """One probe over one window: its output, or why there is none."""

    name: str
    path: Path | None = None  # the raw output file
    data: dict[str, Any] | None = None
    unavailable: str | None = None  # it could not attach: the run goes on without it
    # Nothing of the workload's for it to watch (gc: no GC runtime in its processes).
    not_applicable: str | None = None
    error: str | None = None  # it attached but produced no usable output
    bpf_stats: dict[str, Any] | None = None  # its BPF programs' cost (probes/bpfstats.py)

    @property
    def ok(self) -> bool:
        return (
            self.data is not None
            and self.unavailable is None
            and self.not_applicable is None
            and self.error is None
        )


def not_attached(
    process: ProbeProcess, stop: StopFlag | None, ready: str, exited: Callable[[ProbeProcess], str]
) -> str:
    """Why a probe's process is not attached after its wait for it failed: a stop request,
    still not (`ready`: what else it waited for) while it runs, else how it ended (`exited`).
    It is killed."""
    if stop is not None and stop.requested:
        why = "interrupted before it attached"
    elif process.running():
        why = f"not attached{ready} after {ATTACH_TIMEOUT_S:g} s"
    else:
        why = exited(process)
    process.kill()
    return why


def aborted(spec: ProbeSpec, unavailable: str | None, reason: str) -> ProbeResult:
    """What a probe stopped without a complete window hands back: why it could not attach,
    else `reason` as its error."""
    if unavailable:
        return ProbeResult(spec.name, unavailable=unavailable)
    return ProbeResult(spec.name, error=reason)


class Probe(Protocol):
    spec: ProbeSpec

    def start(self, pids: Sequence[int]) -> None:
        """Spawn it against the processes (the measured client first); never blocks."""

    def wait_attached(self, deadline: float, stop: StopFlag | None) -> None:
        """Block until it is attached; a probe that cannot attach becomes unavailable."""

    def window_start(self) -> None: ...

    def window_end(self) -> None: ...

    def finish(self) -> ProbeResult:
        """After window_end: wait for it to exit and read its output."""

    def abort(self, reason: str) -> ProbeResult:
        """Stop it without a complete window; the result says why."""
