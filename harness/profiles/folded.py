"""Folded stacks (`root;frame;...;leaf COUNT`, one line per distinct stack) and the figures
read off them: lock share, top frames by self time, frames that grew against a baseline."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

Folded = Counter[str]  # stack -> weight (samples or ns)

KERNEL_SUFFIX = "_[k]"  # inferno-collapse-perf --all marks kernel frames so
_PID_ROOT = re.compile(r"^(?P<comm>.*)-(?P<pid>\d+)$")


def parse(text: str) -> Folded:
    """Lines `stack weight`; blank lines and lines without a numeric weight are skipped."""
    folded: Folded = Counter()
    for line in text.splitlines():
        stack, _, weight = line.rstrip().rpartition(" ")
        if stack and weight.isdigit():
            folded[stack] += int(weight)
    return folded


def read(path: Path) -> Folded:
    return parse(path.read_text(errors="replace"))


def render(folded: Mapping[str, int]) -> str:
    """Sorted lines, as inferno-flamegraph and inferno-diff-folded take them."""
    return "".join(f"{stack} {weight}\n" for stack, weight in sorted(folded.items()) if weight > 0)


def merge(parts: Iterable[Mapping[str, int]]) -> Folded:
    total: Folded = Counter()
    for part in parts:
        total.update(part)
    return total


def split_pid_roots(folded: Mapping[str, int]) -> dict[int | None, Folded]:
    """Stacks collapsed with `--pid` start with `comm-PID`: per pid, the stacks with the root
    frame cut back to `comm` (so repeats with different pids merge). None: no pid in the root."""
    out: dict[int | None, Folded] = {}
    for stack, weight in folded.items():
        root, sep, rest = stack.partition(";")
        match = _PID_ROOT.match(root)
        pid = int(match["pid"]) if match else None
        comm = match["comm"] if match else root
        out.setdefault(pid, Counter())[comm + sep + rest] += weight
    return out


def total(folded: Mapping[str, int]) -> int:
    return sum(folded.values())


def frames(stack: str) -> list[str]:
    return stack.split(";")


def matches_any(frame: str, patterns: Sequence[str]) -> bool:
    lowered = frame.lower()
    return any(pattern in lowered for pattern in patterns)


def share_matching(folded: Mapping[str, int], patterns: Sequence[str]) -> float | None:
    """The share of the weight whose stack holds a frame matching a pattern (case-insensitive
    substring; the root frame, the process name, is not looked at). None without weight."""
    lowered = [p.lower() for p in patterns]
    all_weight = total(folded)
    if all_weight <= 0:
        return None
    hit = sum(
        weight
        for stack, weight in folded.items()
        if any(matches_any(frame, lowered) for frame in frames(stack)[1:])
    )
    return hit / all_weight


def top_self(folded: Mapping[str, int], n: int = 10) -> list[dict[str, object]]:
    """The n frames with the most self weight (the leaf of the stack), with their share."""
    leaves: Counter[str] = Counter()
    for stack, weight in folded.items():
        leaves[frames(stack)[-1]] += weight
    all_weight = total(folded) or 1
    ranked = sorted(leaves.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [
        {"frame": frame, "samples": weight, "share": weight / all_weight}
        for frame, weight in ranked
    ]


def self_shares(folded: Mapping[str, int]) -> dict[str, float]:
    """Per frame name, the share of the weight where it is the leaf (self time)."""
    leaves: Counter[str] = Counter()
    for stack, weight in folded.items():
        leaves[frames(stack)[-1]] += weight
    all_weight = total(folded)
    return {frame: w / all_weight for frame, w in leaves.items()} if all_weight else {}


def grew_most(
    baseline: Mapping[str, int], candidate: Mapping[str, int], n: int = 10
) -> list[dict[str, object]]:
    """The n frames whose self share grew most from baseline to candidate (as `pprof -top
    -diff_base` ranks flat time; inclusive shares would rank the frames every stack passes
    through, and those move with how deep stacks could be walked)."""
    before, after = self_shares(baseline), self_shares(candidate)
    grown = sorted(
        ((share - before.get(frame, 0.0), frame) for frame, share in after.items()),
        key=lambda item: (-item[0], item[1]),
    )
    return [
        {
            "frame": frame,
            "baseline_share": before.get(frame, 0.0),
            "share": after[frame],
            "delta": delta,
        }
        for delta, frame in grown[:n]
        if delta > 0
    ]
