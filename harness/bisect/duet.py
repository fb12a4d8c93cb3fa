"""Two builds of a suite measured on the same cell interleaved, A B, B A, A B... within one
run, paired by round ("duet" benchmarking): the machine's drift hits a round's two repeats
alike, and the ratio of each round (B / A) cancels it. The figures are those of the probes'
overhead (harness/probes/overhead_pairs.py): the median of the rounds' ratios, its interval
from order statistics, and the Wilcoxon signed-rank p of the log ratios."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.stop import StopFlag
from harness.describe import plain_number
from harness.errors import HarnessError
from harness.probes.overhead_pairs import interval
from harness.run.plan import Cell
from harness.run.repeat import run_repeat
from harness.stats import flatten_metrics, median
from harness.suites import Suite

FAILURES_ALLOWED = 2  # repeats of one side that may fail before the side is given up


class Interrupted(Exception):
    """A stop signal arrived during a repeat."""


class Stopped(HarnessError):
    """What a stopped bisection or two-revision run ends with (exit 130, as a stopped run)."""

    exit_code = 130


class SideFailed(HarnessError):
    """One build's repeats keep failing: it cannot be measured."""

    def __init__(self, side: str, error: str) -> None:
        super().__init__(f"the {side} build's repeats fail: {error}")
        self.side = side
        self.error = error


@dataclass(frozen=True)
class Timing:
    duration_s: float
    warmup_s: float
    deadline_slack_s: float


@dataclass
class Duet:
    """The rounds of one cell so far: each side's metric value, and B / A per round."""

    cell: Cell
    metric: str
    a: list[float] = field(default_factory=list)
    b: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rounds(self) -> int:
        return len(self.b)

    @property
    def ratios(self) -> list[float]:
        return [b / a for a, b in zip(self.a, self.b, strict=True) if a > 0]

    def figures(self) -> dict[str, Any]:
        """ratio, ci95_low, ci95_high, p_value, significant... (overhead_pairs.interval)."""
        return interval(self.ratios)

    def medians(self) -> tuple[float | None, float | None]:
        return (median(self.a) if self.a else None, median(self.b) if self.b else None)

    def document(self) -> dict[str, Any]:
        figures = self.figures()
        return {
            "cell": self.cell.id,
            "metric": self.metric,
            "a": self.a,
            "b": self.b,
            "rounds": self.rounds,
            "ratio": figures.get("ratio"),
            "low": figures.get("ci95_low"),
            "high": figures.get("ci95_high"),
            "p": figures.get("p_value"),
            "seconds": round(self.seconds, 3),
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.document(), indent=2) + "\n")


def add_rounds(
    duet: Duet,
    a: Suite,
    b: Suite,
    rounds: int,
    timing: Timing,
    stop: StopFlag,
    on_round: Callable[[Duet], None] | None = None,
) -> None:
    """`rounds` more rounds of the duet's cell, A then B in even rounds, B then A in odd ones
    (neither build always runs second, after the other warmed the caches)."""
    args = [
        *duet.cell.run_args(),
        "--duration-s",
        plain_number(timing.duration_s),
        "--warmup-s",
        plain_number(timing.warmup_s),
    ]
    deadline_s = timing.warmup_s + timing.duration_s + timing.deadline_slack_s
    failures = {"A": 0, "B": 0}
    started = time.monotonic()
    target = duet.rounds + rounds
    while duet.rounds < target:
        order = (("A", a), ("B", b)) if duet.rounds % 2 == 0 else (("B", b), ("A", a))
        values: dict[str, float] = {}
        for side, suite in order:
            value = _one(suite, args, deadline_s, stop, duet.metric, side, failures)
            if value is None:
                break
            values[side] = value
        if len(values) == 2:
            duet.a.append(values["A"])
            duet.b.append(values["B"])
            if on_round is not None:
                on_round(duet)
    duet.seconds += time.monotonic() - started


def _one(
    suite: Suite,
    args: list[str],
    deadline_s: float,
    stop: StopFlag,
    metric: str,
    side: str,
    failures: dict[str, int],
) -> float | None:
    """One repeat's metric value; None when it failed (SideFailed past FAILURES_ALLOWED)."""
    outcome = run_repeat(suite.binary, suite.folder, args, deadline_s, stop)
    if outcome.interrupted or stop.requested:
        raise Interrupted
    error = outcome.error if not outcome.ok else None
    value = _metric(outcome.result, metric) if outcome.ok else None
    if outcome.ok and value is None:
        error = f"its result has no metric '{metric}'"
    if value is not None:
        return value
    failures[side] += 1
    if failures[side] > FAILURES_ALLOWED:
        raise SideFailed(side, str(error))
    return None


def _metric(result: Mapping[str, Any] | None, metric: str) -> float | None:
    if result is None:
        return None
    value = flatten_metrics(result).get(metric)
    return value if value is not None and value > 0 else None
