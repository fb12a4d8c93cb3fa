"""Driver of the libbpf collectors bpf/build/sched and bpf/build/futex (see bpf/README.md).

They print {"event":"attached"} once attached, count between SIGUSR1 and SIGUSR2 (from the
start with --now), and on SIGTERM detach and write one JSON object to --out, exit 0. They
fail with exit 2 on bad arguments and exit 1 with `unavailable: <reason>` on stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from harness.base.stop import StopFlag
from harness.probes.availability import collector_binary, collector_problem
from harness.probes.drivers.process import ProbeProcess
from harness.probes.probe import FINISH_TIMEOUT_S, ProbeResult, ProbeSpec, aborted, not_attached

UNAVAILABLE_PREFIX = "unavailable:"


def is_attached_event(line: str) -> bool:
    text = line.strip()
    if not text.startswith("{"):
        return False
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and value.get("event") == "attached"


class CollectorProbe:
    def __init__(
        self, spec: ProbeSpec, out_path: Path, now: bool = False, args: Sequence[str] = ()
    ) -> None:
        self.spec = spec
        self.out_path = out_path
        # The collector writes here; the output is renamed to out_path once it is whole.
        self.partial_path = out_path.with_name(f".{out_path.name}.partial")
        self.now = now
        self.args = list(args)  # the kind's own options (sched --counters-only)
        self.process: ProbeProcess | None = None
        self.unavailable: str | None = None

    def start(self, pids: Sequence[int]) -> None:
        self.unavailable = collector_problem(self.spec.name)
        if self.unavailable:
            return
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [str(collector_binary(self.spec.name))]
        for pid in pids:
            argv += ["--pid", str(pid)]
        argv += ["--out", str(self.partial_path)]
        if self.now:
            argv.append("--now")
        argv += self.args
        try:
            self.process = ProbeProcess(argv)
        except OSError as err:
            self.unavailable = f"cannot start {argv[0]}: {err.strerror}"

    def wait_attached(self, deadline: float, stop: StopFlag | None) -> None:
        process = self.process
        # The collectors block their signals from the start and take them with sigwaitinfo:
        # one sent before they are attached waits for them.
        if process is None or process.wait_for_line(is_attached_event, deadline, stop):
            return
        self.unavailable = not_attached(process, stop, "", self._exit_reason)
        self.partial_path.unlink(missing_ok=True)
        self.process = None

    def window_start(self) -> None:
        if self.process is not None and not self.now:
            self.process.send(signal.SIGUSR1)

    def window_end(self) -> None:
        if self.process is not None:
            self.process.send(signal.SIGUSR2)  # stop counting first: detaching takes a while
            self.process.send(signal.SIGTERM)

    def finish(self) -> ProbeResult:
        result = ProbeResult(self.spec.name, unavailable=self.unavailable)
        process = self.process
        if process is None:
            return result
        code = process.wait(FINISH_TIMEOUT_S)
        if code is None:
            process.kill()
            result.error = f"did not exit within {FINISH_TIMEOUT_S:g} s of SIGTERM"
        elif code != 0:
            result.error = self._exit_reason(process)
        else:
            try:
                data = json.loads(self.partial_path.read_text())
                os.replace(self.partial_path, self.out_path)
            except (OSError, ValueError) as err:
                result.error = f"no JSON output in {self.out_path}: {err}"
            else:
                result.path, result.data = self.out_path, data
        with contextlib.suppress(OSError):
            self.partial_path.unlink(missing_ok=True)
        return result

    def abort(self, reason: str) -> ProbeResult:
        if self.process is not None:
            self.process.kill()
            with contextlib.suppress(OSError):
                self.partial_path.unlink(missing_ok=True)
        return aborted(self.spec, self.unavailable, reason)

    def _exit_reason(self, process: ProbeProcess) -> str:
        code = process.wait(0)
        lines = process.stderr_lines()
        for line in reversed(lines):
            if line.startswith(UNAVAILABLE_PREFIX):
                return line[len(UNAVAILABLE_PREFIX) :].strip()
        last = f": {lines[-1]}" if lines else ""
        if code == 2:
            return f"{self.spec.name} rejected its arguments{last}"
        return f"{self.spec.name} exited with code {code}{last}"
