"""`harness probe`: attach probes to running processes for a number of seconds."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.errors import BadInput
from harness.probes.probe import ProbeResult
from harness.probes.session import ProbeSession
from harness.probes.spec import ProbeSpec
from harness.profiles import folded
from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS
from harness.workload import StopFlag

POLL_S = 0.05


def check_pids(pids: Sequence[int]) -> None:
    for pid in pids:
        if pid <= 0 or not Path(f"/proc/{pid}").is_dir():
            raise BadInput(f"--pid {pid}: no such process")


def probe_pids(
    specs: Sequence[ProbeSpec], pids: Sequence[int], duration_s: float, stop: StopFlag
) -> dict[str, ProbeResult]:
    """Every probe over one window of `duration_s` (shorter if stopped); collectors count
    from their attachment (--now), bpftrace from its SIGUSR1 snapshot."""
    with tempfile.TemporaryDirectory(prefix="harness-probe-") as folder:
        session = ProbeSession(specs, Path(folder), 1, stop, now=True)
        try:
            session.on_ready(pids)
            session.on_measure_start()
            end = time.monotonic() + duration_s
            while time.monotonic() < end and not stop.requested:
                time.sleep(POLL_S)
            session.on_measure_end()
        finally:
            results = session.close()
        for result in results.values():
            ok = result.ok and result.path is not None and result.data is not None
            if ok and result.name == "oncpu":
                assert result.path is not None and result.data is not None
                result.data = oncpu_inline(result.path, result.data)
            result.path = None  # the temporary folder goes away
        return results


def oncpu_inline(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The oncpu output with its folded stacks inline (the file goes with the temporary
    folder) and its figures over all the processes probed."""
    stacks = folded.merge(
        folded.split_pid_roots(folded.read(path.parent / data["folded"])).values()
    )
    share = folded.share_matching(stacks, DEFAULT_MUTEX_PATTERNS)
    return {
        **data,
        "folded": folded.render(stacks).splitlines(),
        "top_self": folded.top_self(stacks),
        "mutex_share": share,
    }


def as_json(pids: Sequence[int], duration_s: float, results: dict[str, ProbeResult]) -> Any:
    """{"pids", "duration_s", "probes": {name: the probe's own JSON, or why there is none}}."""
    probes: dict[str, Any] = {}
    for name, result in results.items():
        if result.unavailable:
            probes[name] = {"unavailable": result.unavailable}
        elif result.error or result.data is None:
            probes[name] = {"error": result.error or "no output"}
        else:
            probes[name] = result.data
    return {"pids": list(pids), "duration_s": duration_s, "probes": probes}
