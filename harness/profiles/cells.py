"""The `profile` of every cell of a run: the repeats' stacks merged, flame graphs drawn, and
the figures read off them (docs/profiles.md).

Files, paths relative to the run directory (`<slug>` is the cell id made file-safe):
- folded/<slug>.oncpu.folded, flame/<slug>.oncpu.svg: on-CPU samples of every process of the
  workload (root frame = process name), all repeats;
- flame/<slug>.diff.svg: against the cell it is compared with (its twin's or the baseline's)
  of the same scenario and params (inferno-diff-folded --normalize, baseline first; red = more
  than in the baseline);
- folded/<slug>.offcpu.folded, flame/<slug>.offcpu.svg: futex waits weighted by blocked ns;
- folded/<slug>.wakeups.folded, flame/<slug>.wakeups.svg: waker thread -> wakee thread counts;
- folded/<slug>.offwake.folded, flame/<slug>.offwake.svg, flame/<slug>.offwake.diff.svg: every
  blocking, blocked stack `--` waker stack, by blocked ns (profiles/offwake_graphs.py).
The figures (mutex_share, top_self, grew) are of the measured client's samples only, like
the per-op metrics.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.base.writes import write_atomic
from harness.params import render as render_value
from harness.profiles import folded, inferno, offwake_graphs
from harness.profiles.graphs import FlameGraph
from harness.profiles.settings import ProfileSettings
from harness.profiles.stacks import Stacks
from harness.rundoc.model import Cell, GrownFrame, Profile, RunDoc, TopFrame
from harness.stats import params_key

TOP = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


@dataclass(frozen=True)
class _Plain:
    """A graph drawn as its stacks are, with no differential: its title's end, its total in
    the subtitle, inferno's count name and palette, and the profile's key of the total."""

    title: str
    counted: Callable[[int], str]
    countname: str
    colors: str
    total_key: str


# By the name of their stacks (Stacks' fields).
_PLAIN = {
    "offcpu": _Plain(
        "off-CPU in futex waits",
        lambda ns: f"{ns / 1e6:.1f} ms blocked, weighted by ns",
        "ns",
        "io",
        "offcpu_ns",
    ),
    "wakeups": _Plain(
        "wake-ups (waker -> wakee)",
        lambda count: f"{count} wake-ups of the workload's threads",
        "wakeups",
        "wakeup",
        "wakeups",
    ),
}


def slug(cell_id: str) -> str:
    return _UNSAFE.sub("_", cell_id.replace("/", "__")).strip("_") or "cell"


def _describe(cell: Cell) -> str:
    shown = ", ".join(f"{k}={render_value(v)}" for k, v in cell.params.items())
    return f"scenario {cell.scenario}" + (f", {shown}" if shown else "")


@dataclass(frozen=True)
class Drawing:
    """One cell's graphs being drawn: the cell, its stacks, the baseline cell's with them
    (None without a baseline cell), the cell's file-safe name, its description for the
    subtitles, and its profile being filled in."""

    cell: Cell
    stacks: Stacks
    baseline: tuple[Cell, Stacks] | None
    name: str
    where: str
    out: Profile


class CellProfiler:
    def __init__(
        self, run_dir: Path, suite: str, settings: ProfileSettings, graphs: Sequence[FlameGraph]
    ) -> None:
        self.run_dir = run_dir
        self.suite = suite
        self.settings = settings
        self.graphs = graphs  # every kind's, in the reports' order (probes/registry.py)

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

    def _differential(
        self, base: folded.Folded, stacks: folded.Folded, file: str, title: str, subtitle: str
    ) -> str:
        """flame/<file>: `stacks` against the baseline cell's `base` (inferno-diff-folded
        --normalize, baseline first: red = more than in the baseline, by share); its path."""
        diff = inferno.diff_folded(
            folded.render(base), folded.render(stacks), self.run_dir / "folded"
        )
        return self._svg(file, diff, f"{self.suite}: {title}", subtitle)

    def profile(self, cell: Cell, stacks: Stacks, baseline: tuple[Cell, Stacks] | None) -> Profile:
        """The cell's `profile`; `notes` says what is missing and why. Each kind's graphs in
        the reports' order: drawn from its stacks, or a note naming the kind."""
        notes: list[str] = []
        at = Drawing(cell, stacks, baseline, slug(cell.id), _describe(cell), Profile(notes=notes))
        for graph in self.graphs:
            if graph.differential:  # drawn with the graph of the same stacks
                continue
            if getattr(stacks, graph.key):
                notes += self._draw(graph, at)
            elif graph.always or graph.probe in cell.probes:
                notes.append(_missing(cell, graph.probe, graph.missing))
        at.out.notes = notes  # the model copied the list it was given
        return at.out

    def _draw(self, graph: FlameGraph, at: Drawing) -> list[str]:
        """Draws one graph (by its stacks' name) into the profile; the notes on what could
        not be."""
        if graph.key == "oncpu":
            return self._oncpu(graph, at)
        if graph.key == "offwake":
            return offwake_graphs.draw(self, graph.probe, at)
        plain = _PLAIN[graph.key]
        drawn: folded.Folded = getattr(at.stacks, graph.key)
        total = folded.total(drawn)
        folded_path, svg = self._graph(
            f"{at.name}.{graph.key}",
            drawn,
            f"{self.suite}: {at.cell.strategy}, {plain.title}",
            f"{at.where}; {plain.counted(total)}",
            countname=plain.countname,
            colors=plain.colors,
        )
        assert graph.folded_key is not None
        setattr(at.out, graph.folded_key, folded_path)
        setattr(at.out, graph.svg_key, svg)
        setattr(at.out, plain.total_key, total)
        return []

    def _oncpu(self, graph: FlameGraph, at: Drawing) -> list[str]:
        """The on-CPU graph, the client's figures and the differential graph."""
        out, stacks = at.out, at.stacks
        sampled = at.cell.probes.get(graph.probe)
        repeats = len(sampled.paths or []) if sampled else 0
        samples = folded.total(stacks.oncpu)
        hz = f" at {stacks.frequency_hz} Hz" if stacks.frequency_hz else ""
        out.folded, out.svg = self._graph(
            f"{at.name}.oncpu",
            stacks.oncpu,
            f"{self.suite}: {at.cell.strategy}, on-CPU",
            f"{at.where}; {samples} samples{hz}, {repeats} repeat(s)",
            colors="hot",
        )
        out.samples = samples
        out.client_samples = folded.total(stacks.client)
        out.mutex_share = folded.share_matching(stacks.client, self.settings.mutex_patterns)
        out.top_self = [TopFrame.model_validate(t) for t in folded.top_self(stacks.client, TOP)]
        missing_diff = self._diff(at)
        return [missing_diff] if missing_diff else []

    def _diff(self, at: Drawing) -> str | None:
        """Draws the differential graph into the profile, or says why there is none."""
        if at.baseline is None:
            return "no differential graph: no baseline cell with this scenario/params"
        base_cell, base = at.baseline
        if base_cell is at.cell:
            return None
        if not base.oncpu:
            return "no differential graph: the baseline cell has no on-CPU profile"
        at.out.diff_svg = self._differential(
            base.oncpu,
            at.stacks.oncpu,
            f"{at.name}.diff.svg",
            f"{at.cell.strategy} vs {base_cell.strategy}, on-CPU",
            f"{at.where}; red: more than in {base_cell.strategy}, blue: less "
            "(normalised by sample count)",
        )
        at.out.diff_baseline = base_cell.id
        at.out.grew = [
            GrownFrame.model_validate(g)
            for g in folded.grew_most(base.client, at.stacks.client, TOP)
        ]
        return None


def _missing(cell: Cell, probe: str, what: str) -> str:
    entry = cell.probes.get(probe)
    if entry is None:
        return f"{what}: the {probe} probe did not run"
    reason = entry.unavailable or entry.error
    return f"{what}: {probe} {'unavailable: ' + reason if reason else 'recorded nothing'}"


def build_profiles(
    run_dir: Path,
    run: RunDoc,
    gathered: Sequence[Stacks],
    graphs: Sequence[FlameGraph],
    settings: ProfileSettings,
) -> tuple[list[Profile | None], list[str]]:
    """(each cell's `profile`, None for a cell without probes; problems that stopped a graph,
    the rest of the run is kept). Without inferno nothing is drawn and the reason goes in
    each profile."""
    problem = inferno.problem()
    cells = run.cells
    if problem:
        note = f"no flame graphs: {problem}"
        return [Profile(notes=[note]) if cell.probes else None for cell in cells], [problem]
    # Each cell's graphs are drawn against the cell it is compared with: its twin's or the
    # baseline's of its scenario and params.
    by_strategy = {
        (cell.strategy, *_group(cell)): (cell, stacks)
        for cell, stacks in zip(cells, gathered, strict=True)
    }
    profiler = CellProfiler(run_dir, run.suite, settings, graphs)
    profiles: list[Profile | None] = []
    errors = []
    for cell, stacks in zip(cells, gathered, strict=True):
        if not cell.probes:
            profiles.append(None)
            continue
        try:
            # The baseline's own cell (compared with nothing) is drawn against itself: none.
            against = run.baseline_of(cell) or cell.strategy
            profiles.append(
                profiler.profile(cell, stacks, by_strategy.get((against, *_group(cell))))
            )
        except (inferno.InfernoError, OSError) as err:
            profiles.append(Profile(notes=[f"flame graphs failed: {err}"]))
            errors.append(f"{cell.id}: {err}")
    return profiles, errors


def _group(cell: Cell) -> tuple[str, str]:
    return cell.scenario, params_key(cell.params)
