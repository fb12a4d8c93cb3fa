"""What a repeat's probes add to its cell in run.json (`cells[].probes`): computed here,
stored by the run's record.

Per probe: `repeats`, one entry per repeat (a summary of its output and the path of the raw
file, or `unavailable`/`not_applicable`/`error`), and over the cell's repeats: `paths`,
`lost_events` and `totals` (collectors: their totals added up). A probe that produced nothing
in any repeat also gets `unavailable` (or `not_applicable`, `error`) at the top: nothing goes
silently missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.probes import bpfstats, registry
from harness.probes.probe import ProbeResult
from harness.probes.totals import add
from harness.rundoc.model import BpfStats, ProbeRepeat, ProbeSummary

EXPLAIN_FOLDER = "explain"  # in a cell's folder: the explain repeats' raw files, r<round>-*


def cell_folder(run_dir: Path, cell_id: str) -> Path:
    """`<run>/probes/<cell id>`: the id's `/`-separated parts become nested folders."""
    parts = [part if part not in ("", ".", "..") else f"_{part}_" for part in cell_id.split("/")]
    return run_dir.joinpath("probes", *parts)


def repeat_entry(repeat: int, result: ProbeResult, run_dir: Path, ops: float | None) -> ProbeRepeat:
    if result.unavailable:
        return ProbeRepeat(repeat=repeat, unavailable=result.unavailable)
    if result.not_applicable:
        return ProbeRepeat(repeat=repeat, not_applicable=result.not_applicable)
    if result.error or result.data is None or result.path is None:
        return ProbeRepeat(repeat=repeat, error=result.error or "no output")
    entry: dict[str, Any] = {"repeat": repeat, "path": str(result.path.relative_to(run_dir))}
    entry |= registry.kind_of(result.name).recorded(result.data, ops)
    if result.bpf_stats is not None:
        entry["bpf_stats"] = result.bpf_stats
    return ProbeRepeat.model_validate(entry)


def summarize(repeats: list[ProbeRepeat]) -> ProbeSummary:
    done = [r for r in repeats if r.path is not None]
    if not done:
        last = repeats[-1] if repeats else None
        if last is not None and last.unavailable is not None:
            return ProbeSummary(repeats=repeats, unavailable=last.unavailable)
        if last is not None and last.not_applicable is not None:
            return ProbeSummary(repeats=repeats, not_applicable=last.not_applicable)
        error = last.error if last is not None else None
        return ProbeSummary(repeats=repeats, error=error or "no repeat ran")
    summary = ProbeSummary(repeats=repeats, paths=[r.path for r in done if r.path])
    if any(r.lost_events is not None for r in done):
        summary.lost_events = sum(r.lost_events or 0 for r in done)
    totals = None
    for r in done:
        if r.totals is not None:
            totals = add(totals, r.totals)
    summary.totals = totals
    cost = bpfstats.add_up([r.bpf_stats.model_dump() for r in done if r.bpf_stats is not None])
    if cost is not None:
        summary.bpf_stats = BpfStats.model_validate(cost)
    return summary


def with_repeat(
    cell_probes: Mapping[str, ProbeSummary],
    repeat: int,
    results: Mapping[str, ProbeResult],
    run_dir: Path,
    ops: float | None,
) -> dict[str, ProbeSummary]:
    """The cell's `probes` object with one more repeat's probe results."""
    probes = dict(cell_probes)
    for name, result in results.items():
        previous = probes[name].repeats if name in probes else []
        probes[name] = summarize([*previous, repeat_entry(repeat, result, run_dir, ops)])
    return probes
