"""How the on-CPU profiler samples, which frames count as lock-related, and whether the
off-wake probe takes kernel stacks."""

from __future__ import annotations

from dataclasses import dataclass

from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS

CALLGRAPHS = ("fp", "dwarf")
DEFAULT_FREQUENCY_HZ = 99  # off the beat of 100 Hz timers, as is the custom


@dataclass(frozen=True)
class ProfileSettings:
    frequency_hz: int = DEFAULT_FREQUENCY_HZ
    callgraph: str = "fp"  # frame pointers; dwarf copies 8 KiB of stack a sample
    mutex_patterns: tuple[str, ...] = DEFAULT_MUTEX_PATTERNS
    kernel_stacks: bool = False  # offwake --kernel-stacks: ~2 us a kernel stack walk

    def config(self) -> dict[str, object]:
        """For run.json `config`."""
        return {
            "perf_frequency_hz": self.frequency_hz,
            "callgraph": self.callgraph,
            "mutex_patterns": list(self.mutex_patterns),
            "offwake_kernel_stacks": self.kernel_stacks,
        }
