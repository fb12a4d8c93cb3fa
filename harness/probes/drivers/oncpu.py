"""The `oncpu` probe: `perf record` sampling the workload's processes with call stacks over
the measured window only, collapsed by inferno into folded stacks.

perf starts with its events disabled (`-D -1`) and takes `enable`/`disable` on a control
FIFO, answering each on an ack FIFO: the first answered command also tells that it has opened
its events. After the window, SIGINT makes it write perf.data; `perf script` and
inferno-collapse-perf turn that into `r<N>-oncpu.folded` next to the JSON summary, and
perf.data is deleted (it is large, and the folded stacks hold what the graphs need).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.base.stop import StopFlag
from harness.base.writes import write_atomic, write_json_atomic
from harness.probes.availability import perf_problem, perf_user_only
from harness.probes.drivers.perfctl import SIGINT_EXITS, PerfProcess
from harness.probes.drivers.perfrate import used_frequency
from harness.probes.drivers.process import ProbeProcess
from harness.probes.probe import FINISH_TIMEOUT_S, ProbeResult, ProbeSpec, aborted
from harness.profiles import folded, inferno
from harness.profiles.settings import ProfileSettings

SCRIPT_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"  # no period: each sample weighs 1
REASON_LINES = 3  # of perf's error message, from its `Error:` line
_LOST = re.compile(r"lost (\d+) (?:samples|chunks)", re.IGNORECASE)


class OncpuProbe:
    def __init__(self, spec: ProbeSpec, out_path: Path, settings: ProfileSettings) -> None:
        self.spec = spec
        self.out_path = out_path
        self.settings = settings
        self.perf: PerfProcess | None = None
        self.unavailable: str | None = None
        self.data_path = out_path.with_suffix(".perf.data")
        self.folded_path = out_path.with_suffix(".folded")
        self.pids: list[int] = []
        self.event = "cpu-clock"
        self.notes: list[str] = []

    def start(self, pids: Sequence[int]) -> None:
        self.unavailable = perf_problem() or inferno.problem()
        if self.unavailable:
            return
        self.pids = list(pids)
        if perf_user_only():
            self.event = "cpu-clock:u"
            self.notes.append("kernel frames not permitted (perf_event_paranoid 2, not root)")
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            "perf",
            "record",
            "-e",
            self.event,
            "-F",
            str(self.settings.frequency_hz),
            "--call-graph",
            self.settings.callgraph,
            "-p",
            ",".join(map(str, self.pids)),
            "-D",
            "-1",
            "-o",
            str(self.data_path),
            "--no-buildid-cache",  # no copy of every profiled binary in ~/.debug
        ]
        old_data = self.data_path.with_name(self.data_path.name + ".old")
        try:
            self.perf = PerfProcess(argv, scratch=(self.data_path, old_data))
        except OSError as err:
            self.unavailable = f"cannot start perf: {err.strerror}"

    def wait_attached(self, deadline: float, stop: StopFlag | None) -> None:
        if self.perf is None:
            return
        # perf reads its control FIFO once its events are open (and disabled).
        if self.perf.command("disable", deadline, stop):
            return
        if stop is not None and stop.requested:
            self.unavailable = "interrupted before it attached"
        else:
            self.unavailable = self._failure("perf did not start sampling")
        self._kill()

    def window_start(self) -> None:
        if self.perf is not None and not self.perf.command("enable"):
            self.notes.append("perf did not acknowledge `enable`")

    def window_end(self) -> None:
        if self.perf is None:
            return
        if not self.perf.command("disable"):
            self.notes.append("perf did not acknowledge `disable`")
        self.perf.interrupt()

    def finish(self) -> ProbeResult:
        result = ProbeResult(self.spec.name, unavailable=self.unavailable)
        perf = self.perf
        if perf is None or perf.process is None:
            return result
        process = perf.process
        code = process.wait(FINISH_TIMEOUT_S)
        try:
            if code is None:
                process.kill()
                result.error = f"perf did not exit within {FINISH_TIMEOUT_S:g} s of SIGINT"
            elif code not in SIGINT_EXITS or not self.data_path.is_file():
                result.error = self._failure(f"perf exited with code {code}")
            else:
                data = self._collapse(process)
                write_json_atomic(self.out_path, data)
                result.path, result.data = self.out_path, data
        except (inferno.InfernoError, OSError, subprocess.SubprocessError) as err:
            result.error = f"oncpu: {err}"
            self.folded_path.unlink(missing_ok=True)
        finally:
            perf.close()
        return result

    def abort(self, reason: str) -> ProbeResult:
        self._kill()
        return aborted(self.spec, self.unavailable, reason)

    def _collapse(self, process: ProbeProcess) -> dict[str, Any]:
        script = subprocess.run(
            ["perf", "script", "-F", SCRIPT_FIELDS, "-i", str(self.data_path)],
            capture_output=True,
            timeout=inferno.RUN_TIMEOUT_S,
            check=False,
        )
        if script.returncode != 0:
            tail = script.stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise inferno.InfernoError(f"perf script exited with {script.returncode}: {tail}")
        text = inferno.collapse_perf(script.stdout)
        stacks = folded.parse(text)
        write_atomic(self.folded_path, folded.render(stacks))
        samples = folded.total(stacks)
        lost = sum(int(m[1]) for line in process.stderr_lines() for m in _LOST.finditer(line))
        return {
            "probe": "oncpu",
            "event": self.event,
            "frequency_hz": used_frequency(self.settings.frequency_hz, process.stderr_lines()),
            "callgraph": self.settings.callgraph,
            "pids": self.pids,
            "folded": self.folded_path.name,
            "samples": samples,
            "lost_events": lost,
            "notes": self.notes,
            "totals": {"samples": samples},
        }

    def _failure(self, fallback: str) -> str:
        lines = self.perf.stderr_lines() if self.perf is not None else []
        return f"perf: {perf_reason(lines, fallback)}"

    def _kill(self) -> None:
        if self.perf is not None:
            self.perf.kill()
        self.folded_path.unlink(missing_ok=True)


def perf_reason(lines: Sequence[str], fallback: str) -> str:
    """perf's error in one line: its `Error:` line and the lines that explain it (perf puts
    the reason on the lines after a bare `Error:`), else its first line, else `fallback`."""
    text = [line.strip() for line in lines if line.strip()]
    start = next((i for i, line in enumerate(text) if "rror" in line or "ermission" in line), None)
    if start is None:
        return text[0] if text else fallback
    return " ".join(text[start : start + REASON_LINES])
