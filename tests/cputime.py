"""What a fixture process really got on a CPU, for bounds that hold on a loaded machine.

A test that counts samples, switches or events a fixture produced bounds them by the CPU time
the fixture was given (from /proc/PID/task/*/schedstat, in ns), not by the wall-clock time it
waited: on a busy 2-core machine a second of wall time may be a fifth of a second on a CPU.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
import time
from pathlib import Path

# A Python program (`python -c`) whose four threads spin for 60 s: CPU time to sample, and, as
# they fight over the GIL (which CPython takes through a pthread mutex and condition), futex
# waits, wake-ups, switches and pthread_mutex_lock calls.
SPINNERS = """
import threading, time
def spin():
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass
for _ in range(3):
    threading.Thread(target=spin, daemon=True).start()
spin()
"""


def cpu_ns(pid: int) -> int:
    """CPU time of every live thread of `pid` so far (sum of their sched run time), in ns."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError):
            continue  # the thread ended meanwhile
    return total


def steal_ns() -> int:
    """The machine's steal time so far, all CPUs together (/proc/stat), in ns: time a vCPU was
    runnable but the hypervisor ran something else. A task's run time leaves it out (paravirt
    steal accounting) while wall-clock timers, perf's cpu-clock among them, count it."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    assert fields[0] == "cpu", fields
    return int(fields[8]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def clock_tick_ns() -> int:
    """The unit of /proc/stat's times, in ns."""
    return 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def wait_for_cpu(pid: int, since_ns: int, wanted_ns: int, timeout: float = 120) -> int:
    """Waits until `pid` has had `wanted_ns` of CPU time since its total was `since_ns`;
    returns the total then. `timeout` only stops a fixture that gets no CPU at all."""
    deadline = time.monotonic() + timeout
    while True:
        now = cpu_ns(pid)
        if now - since_ns >= wanted_ns:
            return now
        assert time.monotonic() < deadline, (
            f"process {pid} got {(now - since_ns) / 1e9:.3f} s of CPU in {timeout} s, "
            f"{wanted_ns / 1e9:.3f} s wanted"
        )
        time.sleep(0.01)


class CpuTrace:
    """A process's CPU time read every `interval_s` by a thread, from entering the `with`
    block to leaving it: the CPU it had inside a window the test cannot see the edges of."""

    def __init__(self, pid: int, interval_s: float = 0.01) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.points: list[tuple[float, int]] = []  # (time.monotonic(), cpu_ns)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self) -> None:
        self.points.append((time.monotonic(), cpu_ns(self.pid)))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._read()

    def __enter__(self) -> CpuTrace:
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def total_ns(self) -> int:
        return self.points[-1][1] - self.points[0][1]

    def least_within(self, window_s: float) -> int:
        """A lower bound of the CPU time the process had in any window of at least `window_s`
        seconds inside the trace: such a window holds, whatever its start, the span from the
        first reading after its start to the last before its end, at least window_s less two
        gaps between readings long; the least CPU over all spans that long is the bound."""
        times = [t for t, _ in self.points]
        gap = max(b - a for a, b in itertools.pairwise(times))
        span = window_s - 2 * gap
        if span <= 0:
            return 0
        last_start = times[-1] - window_s  # the latest a window can start
        if last_start < times[0]:
            return 0
        least = self.total_ns()
        for i, (start, cpu_start) in enumerate(self.points):
            if i > 0 and times[i - 1] >= last_start:
                break  # no window starting after reading i - 1 fits in the trace
            k = bisect.bisect_right(times, start + span) - 1
            least = min(least, self.points[k][1] - cpu_start)
        return least


def process_cpu_ns(pid: int) -> int:
    """CPU time of `pid` so far, its ended threads included (utime + stime of
    /proc/PID/stat, in clock ticks: 10 ms resolution where USER_HZ is 100)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
