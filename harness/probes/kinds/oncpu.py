"""`oncpu`: perf sampling of every process of the workload with call stacks (the driver is
harness/probes/drivers/oncpu.py): flame graphs, top frames and the share of lock-related samples."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.checks import PRIVILEGE_FIX, Check
from harness.format.numbers import DASH, percent
from harness.probes import availability, terminal
from harness.probes.drivers.oncpu import OncpuProbe
from harness.probes.kind import (
    Data,
    DriverOptions,
    ProbeMetric,
    RepeatContext,
    collector_fields,
    declare,
)
from harness.probes.probe import Probe, ProbeResult, ProbeSpec
from harness.profiles import folded, inferno
from harness.profiles.graphs import FlameGraph
from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS
from harness.profiles.settings import ProfileSettings
from harness.profiles.stacks import Stacks

NAME = "oncpu"
METRICS = (ProbeMetric("mutex_share", "share", 60, column="mutex %", label="mutex share"),)
GRAPHS = (
    FlameGraph(
        NAME,
        "oncpu",
        "on-CPU",
        "svg",
        "folded",
        ("on-cpu", "oncpu", "perf", "sampl"),
        rank=10,
        note_rank=50,
        missing="no on-CPU profile",
    ),
    FlameGraph(
        NAME,
        "diff",
        "differential",
        "diff_svg",
        None,
        ("diff",),
        rank=60,
        note_rank=20,
        differential=True,
    ),
)
KIB = 1024
# Measured on runs of this repo's suites and rounded up.
FOLDED_BYTES = 128 * KIB  # a repeat's folded stacks
# perf.data while a repeat is profiled (deleted after it): bytes a sample, by call graph.
PERF_SAMPLE_BYTES = {"fp": 1 * KIB, "dwarf": 10 * KIB}


def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Probe:
    return OncpuProbe(spec, out_path, options.profile)


def problem(root: Path) -> str | None:
    return availability.perf_problem(root) or inferno.problem()


def check(root: Path) -> Check:
    """Whether `--probes oncpu` works here: perf allowed to sample, inferno installed."""
    found = problem(root)
    if found is not None:
        fix = inferno.INSTALL_HINT if "inferno" in found else PRIVILEGE_FIX
        return Check("probe oncpu", "missing", found, fix)
    if availability.perf_user_only(root):
        return Check(
            "probe oncpu",
            "warn",
            "works for user-space frames only (perf_event_paranoid >= 2 without CAP_PERFMON)",
            PRIVILEGE_FIX,
        )
    return Check("probe oncpu", "ok", "works: perf may sample, inferno installed")


def repeat_stacks(folder: Path, data: Data) -> tuple[folded.Folded, folded.Folded]:
    """(every process, the client) of one repeat's samples; the client is its first pid."""
    per_pid = folded.split_pid_roots(folded.read(folder / str(data["folded"])))
    pids = data.get("pids") or []
    client = per_pid.get(pids[0], Counter()) if pids else Counter()
    return folded.merge(per_pid.values()), client


def client_mutex_share(folder: Path, data: Data, patterns: Sequence[str]) -> float | None:
    try:
        _, client = repeat_stacks(folder, data)
    except (OSError, KeyError):
        return None
    return folded.share_matching(client, patterns)


def derive(data: Data, context: RepeatContext) -> dict[str, Any]:
    """mutex_share: the client's samples whose stack has a lock-related frame (a metric of
    the repeat, so it gets a median and interval); with or without an op count."""
    if context.folder is None:
        return {}
    share = client_mutex_share(context.folder, data, context.mutex_patterns)
    return {} if share is None else {"mutex_share": share}


def recorded(data: Data, ops: float | None) -> dict[str, Any]:
    """A collector's fields, and the frequency perf really sampled at."""
    frequency = data.get("frequency_hz")
    return {**collector_fields(data, ops), **({"frequency_hz": frequency} if frequency else {})}


def live(result: ProbeResult) -> dict[str, Any] | None:
    """The output with its folded stacks inline (the file goes with `harness probe`'s
    temporary folder) and its figures over all the processes probed."""
    if result.data is None or result.path is None:
        return result.data
    stacks, _ = repeat_stacks(result.path.parent, result.data)
    return {
        **result.data,
        "folded": folded.render(stacks).splitlines(),
        "top_self": folded.top_self(stacks),
        "mutex_share": folded.share_matching(stacks, DEFAULT_MUTEX_PATTERNS),
    }


def section(name: str, data: Data, console: Console) -> None:
    """Samples, the top frames by self time, the share of lock-related samples."""
    table = terminal.table(
        f"oncpu: top {terminal.TOP} frames by self time", ["frame", "samples", "share"]
    )
    for top in (data.get("top_self") or [])[: terminal.TOP]:
        table.add_row(
            str(top.get("frame")),
            terminal.count(top.get("samples", 0)),
            percent(float(top.get("share") or 0)),
        )
    console.print(table)
    share = data.get("mutex_share")
    console.print(
        f"oncpu totals: {terminal.exact(data.get('samples', 0))} samples at "
        f"{data.get('frequency_hz')} Hz ({data.get('event')}), mutex share "
        f"{DASH if share is None else percent(float(share))}; "
        f"lost events {data.get('lost_events', 0)}"
    )
    for note in data.get("notes") or []:
        console.print(f"  note: {note}", style="yellow")


def stacks(path: Path, data: Data, into: Stacks) -> None:
    """The samples of every process and of the client: the on-CPU and differential graphs."""
    try:
        every, client = repeat_stacks(path.parent, data)
    except (OSError, KeyError):
        return
    into.oncpu.update(every)
    into.client.update(client)
    into.frequency_hz = data.get("frequency_hz")


def files_bytes(profile: ProfileSettings, duration_s: float, repeats: int) -> int:
    """Each repeat's folded stacks, and perf.data of the repeat being recorded."""
    samples = profile.frequency_hz * (os.cpu_count() or 1) * duration_s
    return repeats * FOLDED_BYTES + int(
        samples * PERF_SAMPLE_BYTES.get(profile.callgraph, 10 * KIB)
    )


KIND = declare(__name__, explain=True)  # perf sampling with stacks
