"""`harness probe`: attach probes to running processes for a number of seconds."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.base.stop import StopFlag
from harness.errors import BadInput
from harness.probes import registry
from harness.probes.probe import ProbeResult, ProbeSpec
from harness.probes.session import ProbeSession
from harness.profiles.settings import ProfileSettings

POLL_S = 0.05


def check_pids(pids: Sequence[int]) -> None:
    for pid in pids:
        if pid <= 0 or not Path(f"/proc/{pid}").is_dir():
            raise BadInput(f"--pid {pid}: no such process")


def probe_pids(
    specs: Sequence[ProbeSpec],
    pids: Sequence[int],
    duration_s: float,
    stop: StopFlag,
    profile: ProfileSettings | None = None,
) -> dict[str, ProbeResult]:
    """Every probe over one window of `duration_s` (shorter if stopped); collectors count
    from their attachment (--now), bpftrace from its SIGUSR1 snapshot."""
    with tempfile.TemporaryDirectory(prefix="harness-probe-") as folder:
        session = ProbeSession(specs, Path(folder), 1, stop, now=True, profile=profile)
        try:
            session.on_ready(pids)
            session.on_measure_start()
            # The moment to start what should be seen (scripts and tests wait for this line).
            print(f"harness: window open for {duration_s:g} s", file=sys.stderr, flush=True)
            end = time.monotonic() + duration_s
            while time.monotonic() < end and not stop.requested:
                time.sleep(POLL_S)
            session.on_measure_end()
        finally:
            results = session.close()
        for result in results.values():
            if result.ok:
                result.data = registry.kind_of(result.name).live(result)
            result.path = None  # the temporary folder goes away
        return results


def as_json(pids: Sequence[int], duration_s: float, results: dict[str, ProbeResult]) -> Any:
    """{"pids", "duration_s", "probes": {name: the probe's own JSON, or why there is none:
    {"unavailable"|"not_applicable"|"error": the reason}}}."""
    probes: dict[str, Any] = {}
    for name, result in results.items():
        if result.unavailable:
            probes[name] = {"unavailable": result.unavailable}
        elif result.not_applicable:
            probes[name] = {"not_applicable": result.not_applicable}
        elif result.error or result.data is None:
            probes[name] = {"error": result.error or "no output"}
        else:
            probes[name] = result.data
    return {"pids": list(pids), "duration_s": duration_s, "probes": probes}
