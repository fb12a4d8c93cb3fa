"""The probes of one repeat, driven by the workload's events (the hooks of run_repeat).

ready(pids): start every probe and wait until each is attached, before the gate opens;
measure_start: open their window; measure_end: close it. close() then collects the output,
or stops probes whose window never closed (the workload failed or the run was stopped).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from harness.base.stop import StopFlag
from harness.probes import registry
from harness.probes.bpfstats import BpfStatsWatch
from harness.probes.kind import DriverOptions
from harness.probes.probe import ATTACH_TIMEOUT_S, Probe, ProbeResult, ProbeSpec
from harness.profiles.settings import ProfileSettings


def raw_path(folder: Path, repeat: int, spec: ProbeSpec) -> Path:
    """`<folder>/r<repeat>-<probe>.json`, repeat counted from 1."""
    return folder / f"r{repeat}-{spec.file_stem}.json"


def bpf_pids(probe: Probe) -> list[int]:
    """The processes holding a BPF probe's programs: its collector or bpftrace (`gc`: both
    when the workload runs Go and a JVM)."""
    if (pids := getattr(probe, "bpf_pids", None)) is not None:
        return list(pids)
    process = getattr(probe, "process", None)
    return [process.pid] if process is not None else []


class ProbeSession:
    """Also the hooks object of workload.run_repeat."""

    def __init__(
        self,
        specs: Sequence[ProbeSpec],
        folder: Path,
        repeat: int,
        stop: StopFlag | None,
        now: bool = False,
        profile: ProfileSettings | None = None,
        measurement: bool = False,
    ) -> None:
        # now: the collectors count from their attachment, not from SIGUSR1 (`harness probe`).
        # measurement: the repeat gives figures, a kind with a lean mode runs that.
        self.probes: list[Probe] = []
        for spec in specs:
            kind = registry.kind_of(spec.name)
            args = kind.measurement_args if measurement else ()
            options = DriverOptions(now, profile or ProfileSettings(), args)
            self.probes.append(kind.driver(spec, raw_path(folder, repeat, spec), options))
        self.stop = stop
        self.pids: list[int] = []
        self.stage = "before 'ready'"
        self.no_pids = False
        self.bpf: BpfStatsWatch | None = None

    def on_ready(self, pids: Sequence[int]) -> None:
        self.stage = "after 'ready'"
        self.pids = list(pids)
        if not self.pids:
            self.no_pids = True
            return
        for probe in self.probes:
            probe.start(self.pids)
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        for probe in self.probes:
            probe.wait_attached(deadline, self.stop)
        self.bpf = BpfStatsWatch(
            {
                probe.spec.name: pids
                for probe in self.probes
                if (registry.kind_of(probe.spec.name).collector or probe.spec.is_bpftrace)
                and (pids := bpf_pids(probe))
            }
        )
        self.bpf.attached()

    def on_measure_start(self) -> None:
        self.stage = "after 'measure_start'"
        if self.bpf is not None:
            self.bpf.window_start()
        for probe in self.probes:
            probe.window_start()

    def on_measure_end(self) -> None:
        self.stage = "closed"
        if self.bpf is not None:
            self.bpf.window_end()
        for probe in self.probes:
            probe.window_end()

    def close(self) -> dict[str, ProbeResult]:
        """Every probe's result; no probe process is left running."""
        results = {}
        for probe in self.probes:
            name = probe.spec.name
            if self.no_pids:
                results[name] = ProbeResult(name, unavailable="the ready event lists no pids")
            elif self.stage == "closed":
                results[name] = probe.finish()
            else:
                results[name] = probe.abort(f"the window never closed (workload {self.stage})")
            if self.bpf is not None and results[name].ok:
                results[name].bpf_stats = self.bpf.result(name)
        if self.bpf is not None:
            self.bpf.close()
        return results
