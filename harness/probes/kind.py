"""What a probe kind declares (harness/probes/kinds/<name>.py) and what it is given.

A kind is everything the harness knows about one probe: how to drive it, whether it can run
here, the metrics it adds to a repeat, what run.json keeps of its output, its sections in
`harness probe`, `harness doctor` and report.html, the stacks it gives the profiles and the
flame graphs drawn from them, and the room its files take in a run directory.

A kind's module declares it by its names (`declare`): `NAME`, `driver`, `section`, and as it
needs `check` (a collector's is `availability.collector_check`), `METRICS`, `derive`,
`recorded`, `live`, `report`, `stacks`, `GRAPHS` and `files_bytes`; ProbeKind's fields below
say what each is.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.checks import Check
from harness.probes import availability
from harness.probes.probe import Probe, ProbeResult, ProbeSpec
from harness.profiles.graphs import FlameGraph
from harness.profiles.settings import ProfileSettings
from harness.profiles.stacks import Stacks

Data = Mapping[str, Any]  # a probe's JSON output over one window


@dataclass(frozen=True)
class DriverOptions:
    now: bool  # count from attachment, not from SIGUSR1 (`harness probe`)
    profile: ProfileSettings
    args: tuple[str, ...] = ()  # the collector's extra arguments this repeat (measurement_args)


@dataclass(frozen=True)
class RepeatContext:
    """What a kind's metrics of one repeat may use besides its output."""

    client: int  # the measured client: the first pid of `ready`
    ops: float | None  # the repeat's op count (metrics.op_count), None without one
    folder: Path | None  # where the repeat's raw files are; None when they are not kept
    mutex_patterns: tuple[str, ...]


@dataclass(frozen=True)
class ProbeMetric:
    name: str  # a key of the repeat's metrics, dotted for nested ones
    unit: str
    rank: int  # its place among every kind's metrics (run.json's order, the table's columns)
    column: str | None = None  # heading in the terminal table; None: not a column there
    label: str | None = None  # heading in the reports, when not the column's
    declared: bool = True  # in run.json's `metrics` (compared against the baseline)

    def declaration(self) -> dict[str, str]:
        """As describe declares a workload's metric; lower is better for every probe metric."""
        return {"name": self.name, "unit": self.unit, "better": "lower"}


def no_metrics(data: Data, context: RepeatContext) -> dict[str, Any]:
    return {}


def collector_fields(data: Data, ops: float | None) -> dict[str, Any]:
    """What run.json keeps of one repeat of a collector: its window, losses and totals."""
    return {key: data[key] for key in ("window_ns", "lost_events", "totals") if key in data}


def as_recorded(result: ProbeResult) -> dict[str, Any] | None:
    return result.data


def no_report(run_dir: Path, probe: Data) -> list[str]:
    return []


def no_stacks(path: Path, data: Data, stacks: Stacks) -> None:
    return None


def no_files(profile: ProfileSettings, duration_s: float, repeats: int) -> int:
    return 0


@dataclass(frozen=True)
class ProbeKind:
    name: str  # as given to --probes; bpftrace's is the prefix of `bt:PATH`
    driver: Callable[[ProbeSpec, Path, DriverOptions], Probe]
    # Whether it works on the machine at this root, and if not why and what to do: its line
    # in `harness doctor` (the driver finds the same problem when it starts).
    check: Callable[[Path], Check]
    section: Callable[[str, Data, Console], None]  # its part of `harness probe`'s summary
    collector: bool = False  # driven by the libbpf collector bpf/build/<name>
    # Too costly for the repeats the figures come from (stacks per event, perf sampling,
    # any bpftrace script): it runs on the cell's explain repeats only (docs/probes.md).
    # False: counters aggregated in the kernel, on every repeat.
    explain: bool = False
    # The collector's arguments on the measurement repeats when it has a counters-only mode
    # for them (sched: --counters-only); its explain repeats run it in full, and the cell's
    # `probes` keeps those, the full output (docs/probes.md).
    measurement_args: tuple[str, ...] = ()
    metrics: tuple[ProbeMetric, ...] = ()
    derive: Callable[[Data, RepeatContext], dict[str, Any]] = no_metrics  # metrics of a repeat
    recorded: Callable[[Data, float | None], dict[str, Any]] = collector_fields
    # `harness probe --json`: the output made self-contained (its files go with the run).
    live: Callable[[ProbeResult], dict[str, Any] | None] = as_recorded
    report: Callable[[Path, Data], list[str]] = no_report  # HTML under its name in report.html
    stacks: Callable[[Path, Data, Stacks], None] = no_stacks  # one repeat into the profiles
    graphs: tuple[FlameGraph, ...] = ()  # drawn from those stacks (profiles/cells.py)
    # About the most its files besides its JSON output take in a run directory at once, for
    # so many repeats of so many seconds (the run's preflight).
    files_bytes: Callable[[ProfileSettings, float, int], int] = no_files

    @property
    def needs_explain(self) -> bool:
        """Its whole output comes from explain repeats: explain-only, or lean on the others."""
        return self.explain or bool(self.measurement_args)


# ProbeKind's fields a kind's module gives by a name of its own (the rest by their own name).
_DECLARED_AS = {"name": "NAME", "metrics": "METRICS", "graphs": "GRAPHS"}


def declare(module: str, **flags: Any) -> ProbeKind:
    """The kind of the module `module` (its `__name__`, at its end): each of ProbeKind's fields
    that the module defines under the field's name (`_DECLARED_AS`), ProbeKind's default for
    the others; `flags` gives the fields that are not code (explain, collector...)."""
    names = vars(sys.modules[module])
    given = {
        f.name: names[_DECLARED_AS.get(f.name, f.name)]
        for f in fields(ProbeKind)
        if _DECLARED_AS.get(f.name, f.name) in names
    }
    overlap = given.keys() & flags.keys()
    if overlap:  # a programming error: one place per field
        raise TypeError(f"{module} gives {sorted(overlap)} both by name and as flags")
    if flags.get("collector") and "check" not in given:
        given["check"] = lambda root: availability.collector_check(given["name"], root)
    return ProbeKind(**given, **flags)


def totals_report(line: Callable[[Data], str]) -> Callable[[Path, Data], list[str]]:
    """A kind's part of report.html: one paragraph, `line` of its totals over the repeats;
    nothing when it has none."""

    def report(run_dir: Path, probe: Data) -> list[str]:
        totals = probe.get("totals") or {}
        return [f"<p>{html.escape(line(totals), quote=True)}</p>"] if totals else []

    return report
