"""`offwake`: off-CPU time of every blocking (not only futex waits) by blocked stack and by
the stack of the thread that woke it, from the libbpf collector bpf/build/offwake (the
design of bcc's offwaketime; bpf/README.md): the off-wake flame graph of a cell and its
differential against the baseline (docs/profiles.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console

from harness.format.numbers import human
from harness.probes import terminal
from harness.probes.drivers.collector import CollectorProbe
from harness.probes.kind import Data, DriverOptions, declare, totals_report
from harness.probes.probe import Probe, ProbeSpec
from harness.profiles.graphs import FlameGraph
from harness.profiles.stacks import Stacks

NAME = "offwake"
SEPARATOR = "--"  # between the blocked stack and the waker's, as offwaketime folds them
# A probe of its own, not in every run: its graphs are listed only where it ran.
GRAPHS = (
    FlameGraph(
        NAME,
        "offwake",
        "off-wake",
        "offwake_svg",
        "offwake_folded",
        ("off-wake",),
        rank=40,
        note_rank=10,
        always=False,
        missing="no off-wake graph",
    ),
    FlameGraph(
        NAME,
        "offwake_diff",
        "off-wake differential",
        "offwake_diff_svg",
        None,
        (),
        rank=50,
        note_rank=60,
        differential=True,
        always=False,
    ),
)


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    # Kernel stacks cost ~2 us a walk here, two a blocking: asked for with --kernel-stacks.
    args = ("--kernel-stacks",) if options.profile.kernel_stacks else ()
    return CollectorProbe(spec, out_path, options.now, args)


def folded_lines(data: Data) -> Counter[str]:
    """`comm;[state];blocked root..leaf;--;waker leaf..root;waker comm` -> blocked ns."""
    stacks: Counter[str] = Counter()
    for entry in data.get("stacks") or []:
        ns = int(entry.get("blocked_ns") or 0)
        if ns > 0 and entry.get("folded"):
            stacks[str(entry["folded"])] += ns
    return stacks


def waker_pairs(stacks: Mapping[str, int]) -> Counter[tuple[str, str]]:
    """(blocked comm, waker comm) -> blocked ns; the waker is the last frame: `[interrupt] in
    <comm>` for a wake-up from an interrupt, `[...]` when there was none (preempted, or its
    wake-up not seen)."""
    pairs: Counter[tuple[str, str]] = Counter()
    for line, ns in stacks.items():
        frames = line.split(";")
        pairs[(frames[0], frames[-1])] += ns
    return pairs


def section(name: str, data: Data, console: Console) -> None:
    """Who wakes whom by blocked time, the top stacks, the totals and losses."""
    stacks = folded_lines(data)
    table = terminal.table(
        f"offwake: top {terminal.TOP} (blocked thread <- waker) by blocked time",
        ["blocked", "woken by", "blocked time"],
    )
    for (blocked, waker), ns in waker_pairs(stacks).most_common(terminal.TOP):
        table.add_row(blocked, waker, terminal.ns(ns))
    console.print(table)
    totals = data.get("totals") or {}
    lost = data.get("lost_stacks") or {}
    console.print(
        f"offwake totals: {terminal.ns(totals.get('blocked_ns', 0))} off-CPU in "
        f"{terminal.count(totals.get('blocks', 0))} blockings "
        f"({terminal.ns(totals.get('woken_ns', 0))} woken, "
        f"{terminal.ns(totals.get('preempted_ns', 0))} preempted); stacks lost: "
        f"{lost.get('collisions', 0)} to map collisions, {lost.get('errors', 0)} other; "
        f"lost events {data.get('lost_events', 0)}"
    )


def _totals_line(totals: Data) -> str:
    return (
        f"over the repeats: {human(float(totals.get('blocked_ns') or 0), time_ns=True)} "
        f"off-CPU in {human(float(totals.get('blocks') or 0))} blockings, "
        f"{human(float(totals.get('woken_ns') or 0), time_ns=True)} of it woken by another "
        f"thread; {int(totals.get('lost_stacks') or 0)} stacks lost"
    )


report = totals_report(_totals_line)


def stacks(path: Path, data: Data, into: Stacks) -> None:
    """The off-wake stacks of every process, weighted by blocked ns."""
    into.offwake.update(folded_lines(data))


KIND = declare(__name__, explain=True, collector=True)  # two stacks per blocking
