"""The `profile` of every cell of a run: the repeats' stacks merged, flame graphs drawn, and
the figures read off them (docs/profiles.md).

Files, paths relative to the run directory (`<slug>` is the cell id made file-safe):
- folded/<slug>.oncpu.folded, flame/<slug>.oncpu.svg: on-CPU samples of every process of the
  workload (root frame = process name), all repeats;
- flame/<slug>.diff.svg: against the baseline cell of the same scenario and params
  (inferno-diff-folded --normalize, baseline first; red = more than in the baseline);
- folded/<slug>.offcpu.folded, flame/<slug>.offcpu.svg: futex waits weighted by blocked ns;
- folded/<slug>.wakeups.folded, flame/<slug>.wakeups.svg: waker thread -> wakee thread counts;
- folded/<slug>.offwake.folded, flame/<slug>.offwake.svg, flame/<slug>.offwake.diff.svg: every
  blocking, blocked stack `--` waker stack, by blocked ns (profiles/offwake_graphs.py).
The figures (mutex_share, top_self, grew) are of the measured client's samples only, like
the per-op metrics.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.base.writes import write_atomic
from harness.describe import render as render_value
from harness.probes import registry
from harness.probes.kinds import futex, offwake, oncpu, sched
from harness.profiles import folded, inferno, offwake_graphs
from harness.profiles.settings import ProfileSettings
from harness.profiles.stacks import Stacks
from harness.rundoc.model import Cell, GrownFrame, Profile, RunDoc, TopFrame
from harness.stats import params_key

TOP = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def slug(cell_id: str) -> str:
    return _UNSAFE.sub("_", cell_id.replace("/", "__")).strip("_") or "cell"


def _raw_outputs(run_dir: Path, cell: Cell, probe: str) -> list[tuple[Path, Any]]:
    summary = cell.probes.get(probe)
    out = []
    for entry in summary.repeats if summary else []:
        if entry.path is not None:
            path = run_dir / entry.path
            try:
                out.append((path, json.loads(path.read_text())))
            except (OSError, ValueError):
                continue
    return out


def gather(run_dir: Path, cell: Cell) -> Stacks:
    """Every repeat's output of every probe kind, into the cell's stacks."""
    stacks = Stacks()
    for kind in registry.NAMED:
        for path, data in _raw_outputs(run_dir, cell, kind.name):
            kind.stacks(path, data, stacks)
    return stacks


def _describe(cell: Cell) -> str:
    shown = ", ".join(f"{k}={render_value(v)}" for k, v in cell.params.items())
    return f"scenario {cell.scenario}" + (f", {shown}" if shown else "")


class CellProfiler:
    def __init__(self, run_dir: Path, suite: str, settings: ProfileSettings) -> None:
        self.run_dir = run_dir
        self.suite = suite
        self.settings = settings

    def _graph(
        self, name: str, stacks: folded.Folded, title: str, subtitle: str, **kw: str
    ) -> tuple[str, str]:
        """folded/<name>.folded and flame/<name>.svg of the stacks: their relative paths."""
        text = folded.render(stacks)
        path = self.run_dir / "folded" / f"{name}.folded"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        svg = self._svg(f"{name}.svg", text, title, subtitle, **kw)
        return str(path.relative_to(self.run_dir)), svg

    def _svg(self, name: str, text: str, title: str, subtitle: str, **kw: str) -> str:
        path = self.run_dir / "flame" / name
        inferno.flamegraph(text, path, title=title, subtitle=subtitle, **kw)
        return str(path.relative_to(self.run_dir))

    def profile(self, cell: Cell, stacks: Stacks, baseline: tuple[Cell, Stacks] | None) -> Profile:
        """The cell's `profile`; `notes` says what is missing and why."""
        name, strategy = slug(cell.id), cell.strategy
        where = _describe(cell)
        notes: list[str] = []
        out = Profile(notes=notes)
        sampled = cell.probes.get(oncpu.NAME)
        repeats = len(sampled.paths or []) if sampled else 0
        if stacks.oncpu:
            samples = folded.total(stacks.oncpu)
            hz = f" at {stacks.frequency_hz} Hz" if stacks.frequency_hz else ""
            out.folded, out.svg = self._graph(
                f"{name}.oncpu",
                stacks.oncpu,
                f"{self.suite}: {strategy}, on-CPU",
                f"{where}; {samples} samples{hz}, {repeats} repeat(s)",
                colors="hot",
            )
            out.samples = samples
            out.client_samples = folded.total(stacks.client)
            out.mutex_share = folded.share_matching(stacks.client, self.settings.mutex_patterns)
            out.top_self = [TopFrame.model_validate(t) for t in folded.top_self(stacks.client, TOP)]
            missing_diff = self._diff(out, cell, stacks, baseline, name, where)
            if missing_diff:
                notes.append(missing_diff)
        else:
            notes.append(_missing(cell, oncpu.NAME, "no on-CPU profile"))
        if stacks.offcpu:
            blocked = folded.total(stacks.offcpu)
            out.offcpu_folded, out.offcpu_svg = self._graph(
                f"{name}.offcpu",
                stacks.offcpu,
                f"{self.suite}: {strategy}, off-CPU in futex waits",
                f"{where}; {blocked / 1e6:.1f} ms blocked, weighted by ns",
                countname="ns",
                colors="io",
            )
            out.offcpu_ns = blocked
        else:
            notes.append(_missing(cell, futex.NAME, "no off-CPU graph"))
        if stacks.wakeups:
            count = folded.total(stacks.wakeups)
            out.wakeup_folded, out.wakeup_svg = self._graph(
                f"{name}.wakeups",
                stacks.wakeups,
                f"{self.suite}: {strategy}, wake-ups (waker -> wakee)",
                f"{where}; {count} wake-ups of the workload's threads",
                countname="wakeups",
                colors="wakeup",
            )
            out.wakeups = count
        else:
            notes.append(_missing(cell, sched.NAME, "no wake-up view"))
        if stacks.offwake:
            notes += offwake_graphs.draw(self, out, cell, stacks, baseline, name, where)
        elif offwake.NAME in cell.probes:
            notes.append(_missing(cell, offwake.NAME, "no off-wake graph"))
        out.notes = notes  # the model copied the list it was given
        return out

    def _diff(
        self,
        out: Profile,
        cell: Cell,
        stacks: Stacks,
        baseline: tuple[Cell, Stacks] | None,
        name: str,
        where: str,
    ) -> str | None:
        """Draws the differential graph into `out`, or says why there is none."""
        if baseline is None:
            return "no differential graph: no baseline cell with this scenario/params"
        base_cell, base = baseline
        if base_cell is cell:
            return None
        if not base.oncpu:
            return "no differential graph: the baseline cell has no on-CPU profile"
        diff = inferno.diff_folded(
            folded.render(base.oncpu), folded.render(stacks.oncpu), self.run_dir / "folded"
        )
        out.diff_svg = self._svg(
            f"{name}.diff.svg",
            diff,
            f"{self.suite}: {cell.strategy} vs {base_cell.strategy}, on-CPU",
            f"{where}; red: more than in {base_cell.strategy}, blue: less "
            "(normalised by sample count)",
        )
        out.diff_baseline = base_cell.id
        out.grew = [
            GrownFrame.model_validate(g) for g in folded.grew_most(base.client, stacks.client, TOP)
        ]
        return None


def _missing(cell: Cell, probe: str, what: str) -> str:
    entry = cell.probes.get(probe)
    if entry is None:
        return f"{what}: the {probe} probe did not run"
    reason = entry.unavailable or entry.error
    return f"{what}: {probe} {'unavailable: ' + reason if reason else 'recorded nothing'}"


def build_profiles(
    run_dir: Path, run: RunDoc, settings: ProfileSettings
) -> tuple[list[Profile | None], list[str]]:
    """(each cell's `profile`, None for a cell without probes; problems that stopped a graph,
    the rest of the run is kept). Without inferno nothing is drawn and the reason goes in
    each profile."""
    problem = inferno.problem()
    cells = run.cells
    if problem:
        note = f"no flame graphs: {problem}"
        return [Profile(notes=[note]) if cell.probes else None for cell in cells], [problem]
    gathered = [gather(run_dir, cell) for cell in cells]
    baselines = {
        _group(cell): (cell, stacks)
        for cell, stacks in zip(cells, gathered, strict=True)
        if cell.strategy == run.config.baseline
    }
    profiler = CellProfiler(run_dir, run.suite, settings)
    profiles: list[Profile | None] = []
    errors = []
    for cell, stacks in zip(cells, gathered, strict=True):
        if not cell.probes:
            profiles.append(None)
            continue
        try:
            profiles.append(profiler.profile(cell, stacks, baselines.get(_group(cell))))
        except (inferno.InfernoError, OSError) as err:
            profiles.append(Profile(notes=[f"flame graphs failed: {err}"]))
            errors.append(f"{cell.id}: {err}")
    return profiles, errors


def _group(cell: Cell) -> tuple[str, str]:
    return cell.scenario, params_key(cell.params)
