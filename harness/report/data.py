"""What the HTML report and the Markdown summary share: reading run.json, finding the flame
graphs of a cell, and the findings computed from the data (the columns shown and the figures
are harness/format/'s, as in the terminal tables and the charts). Everything here is pure
except the reads of files inside the run directory, and write_page."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.base.writes import write_atomic
from harness.format.cells import cell_summary, param_text, varying_params
from harness.format.figures import ratio_texts, value_text
from harness.format.metrics import ratio_metric, report_columns, report_labels
from harness.format.notes import probe_problem
from harness.format.numbers import DASH, TIMES, human_p, human_ratio, percent
from harness.probes import registry
from harness.probes.overhead_pairs import paired_text
from harness.profiles.graphs import FlameGraph
from harness.rundoc.files import run_file
from harness.rundoc.jsonfile import as_json, load_run
from harness.rundoc.model import Cell, Config, Host, Profile, RunDoc
from harness.rundoc.view import RunView
from harness.stats import compare_samples, metric_values, params_key

TOP_FRAMES = 10


ComparisonKey = tuple[str, str, str, str]


def comparison_key(scenario: Any, strategy: Any, params: Any, metric: str) -> ComparisonKey:
    return str(scenario), str(strategy), params_key(params), metric


def comparison_index(
    entries: Sequence[Mapping[str, Any]],
) -> dict[ComparisonKey, Mapping[str, Any]]:
    return {
        comparison_key(e["scenario"], e["candidate"], e["params"], str(e["metric"])): e
        for e in entries
    }


def cell_comparison(
    index: Mapping[ComparisonKey, Mapping[str, Any]], cell: Cell, metric: str
) -> Mapping[str, Any] | None:
    return index.get(comparison_key(cell.scenario, cell.strategy, cell.params, metric))


class Labeller:
    """Labels of the run's cells: `tokio-timeout concurrency=256`, the strategy and the params
    that vary over the run (with ` [slow-tail]` when the run has several scenarios)."""

    def __init__(self, cells: Sequence[Cell]) -> None:
        self.params = varying_params([{"params": c.params} for c in cells])
        self.scenario = len({c.scenario for c in cells}) > 1

    def __call__(self, cell: Cell) -> str:
        parts = [cell.strategy]
        parts += [f"{n}={param_text(cell.params.get(n))}" for n in self.params]
        if self.scenario:
            parts.append(f"[{cell.scenario}]")
        return " ".join(parts)


class Facts(RunView):
    """The facts of a run both reports show (report.html's sections and summary.md), built
    once from the typed run.json: its cells, the metric compared with the baseline, the
    comparisons, units, labels and the cells' names."""

    def __init__(self, run: RunDoc, run_dir: Path | None) -> None:
        super().__init__(run)
        self.run_dir = run_dir
        self.config = run.config
        self.baseline = run.config.baseline
        self.units = {**run.units(), **registry.share_units()}
        probe_labels = registry.labels()
        self.labels = report_labels(self.doc, probe_labels)
        self.columns, self.unreported = report_columns(self.doc, self.cell_docs, probe_labels)
        self.metric = ratio_metric(self.doc, self.columns)
        self.entries: list[Mapping[str, Any]] = list(self.doc["comparisons"])
        self.index = comparison_index(self.entries)
        self.name = Labeller(self.cells)

    def summary(self, cell: Cell) -> Mapping[str, Any]:
        """The cell's figures, metric -> its summary."""
        return cell_summary(self.cell_doc(cell))

    def label(self, metric: str) -> str:
        return self.labels.get(metric, metric)


def write_page(
    run_dir: Path, name: str, render: Callable[[RunDoc, Path], str], run: RunDoc | None
) -> Path:
    """Write `<run_dir>/<name>`, rendered from the run (read from `<run_dir>/run.json` when
    not given); return its path."""
    path = run_dir / name
    write_atomic(path, render(run or load_run(run_dir), run_dir))
    return path


def command_text(config: Config) -> str | None:
    return shlex.join(config.command) if config.command else None


def host_text(host: Host) -> str:
    on_off: dict[bool | None, str] = {True: "on", False: "off"}
    return (
        f"{host.hostname} · {host.cpu_model} · {host.logical_cpus} CPUs · "
        f"kernel {host.kernel} · governor {host.governor} · "
        f"SMT {on_off.get(host.smt, 'unknown')} · "
        f"turbo {on_off.get(host.turbo, 'unknown')}"
    )


def repeats_text(config: Config) -> str:
    plural = "" if config.repeats == 1 else "s"
    return (
        f"{config.repeats} repeat{plural} {TIMES} {config.duration_s} s "
        f"(warm-up {config.warmup_s} s, {config.order} order)"
    )


def probes_text(config: Config) -> str:
    return ", ".join(config.probes) if config.probes else "none"


# ---------------------------------------------------------------------------------------------
# Files of the run directory


def svg_size(run_dir: Path, rel: str) -> tuple[int, int] | None:
    """(width, height) of the SVG's root element (inferno writes both), for the preview."""
    try:
        with (run_dir / rel).open("rb") as f:
            head = f.read(16_384).decode("utf-8", "replace")
    except OSError:
        return None
    root = re.search(r"<svg\b[^>]*>", head)
    if root is None:
        return None
    width = re.search(r"\swidth=\"(\d+(?:\.\d+)?)\"", root.group(0))
    height = re.search(r"\sheight=\"(\d+(?:\.\d+)?)\"", root.group(0))
    if width is None or height is None:
        return None
    return round(float(width.group(1))), round(float(height.group(1)))


BASELINE_CELL = "this is the baseline cell"


# The flame graphs, as the probe kinds that draw them declare them.
FLAME_KINDS = registry.flame_graphs()


def note_kind(note: str) -> str | None:
    """Which flame graph a profile note is about (its words before the first colon decide,
    so the reason may name anything); None when it is about all of them."""
    head = note.split(":", 1)[0].lower()
    for kind in sorted(FLAME_KINDS, key=lambda k: k.note_rank):
        if any(word in head for word in kind.keywords):
            return kind.key
    return None


@dataclass
class Flame:
    """One flame graph of a cell: its link, or why there is none."""

    kind: FlameGraph
    path: str | None = None  # relative to the run directory, as in run.json
    href: str | None = None  # set only when the file exists
    folded_path: str | None = None
    folded_href: str | None = None
    missing: str | None = None  # "no off-CPU flame graph: <why>"
    reason: str | None = None  # the <why>
    problems: list[str] = field(default_factory=list)


def profile_notes(profile: Profile) -> list[str]:
    return list(profile.notes or [])


def _missing_reason(kind: FlameGraph, cell: Cell, baseline: str | None) -> str:
    if kind.differential and baseline is not None and cell.strategy == baseline:
        return BASELINE_CELL
    if cell.profile.empty:
        return "run.json has no profile for this cell (the profiler did not run)"
    notes = [n for n in profile_notes(cell.profile) if note_kind(n) in (kind.key, None)]
    return "; ".join(notes) if notes else "run.json gives no reason"


def flames(run_dir: Path, cell: Cell, baseline: str | None) -> list[Flame]:
    profile = cell.profile
    out = []
    for kind in FLAME_KINDS:
        if not kind.always and kind.probe not in cell.probes:
            continue
        flame = Flame(kind)
        path = profile.file(kind.svg_key)
        folded = profile.file(kind.folded_key) if kind.folded_key else None
        if folded:
            flame.folded_path = folded
            flame.folded_href = run_file(run_dir, folded)
            if flame.folded_href is None:
                flame.problems.append(
                    f"the folded stacks {folded} named in run.json are not in the run directory"
                )
        if path:
            flame.path = path
            flame.href = run_file(run_dir, path)
            if flame.href is None:
                flame.reason = f"{path} is named in run.json but is not in the run directory"
        else:
            flame.reason = _missing_reason(kind, cell, baseline)
        if flame.reason is not None:
            flame.missing = gap_text([kind.title], flame.reason)
        out.append(flame)
    return out


def flame_gaps(flames: Sequence[Flame], skip_baseline_diff: bool = False) -> list[str]:
    """The missing flame graphs, one statement per reason: `no on-CPU, off-CPU or wake-up
    flame graph: run.json has no profile for this cell (...)`."""
    by_reason: dict[str, list[str]] = {}
    for flame in flames:
        if flame.reason is None:
            continue
        if skip_baseline_diff and flame.kind.key == "diff" and flame.reason == BASELINE_CELL:
            continue
        by_reason.setdefault(flame.reason, []).append(flame.kind.title)
    return [gap_text(titles, reason) for reason, titles in by_reason.items()]


def gap_text(titles: Sequence[str], reason: str) -> str:
    """A note that already says what is missing ("no off-CPU graph: ...") is kept as is."""
    if reason.lower().startswith("no "):
        return reason
    which = titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} or {titles[-1]}"
    return f"no {which} flame graph: {reason}"


# ---------------------------------------------------------------------------------------------
# Probes


def probe_problems(probe: Mapping[str, Any], named: bool = False) -> list[str]:
    """`unavailable: ...`, `failed: ...` (once per reason) of one probe (its run.json form,
    as format/notes.py reads it); `does not apply: ...` only when the user named it."""
    top = probe_problem(probe, named)  # no repeat produced output: the last one's reason
    problems: dict[str, None] = {}
    if top is not None:
        problems[f"{top[0]}: {top[1]}"] = None
    for r in probe["repeats"]:
        problem = probe_problem(r, named)
        if problem is not None and problem != top:
            problems[f"{problem[0]} in repeat {r['repeat']}: {problem[1]}"] = None
    return list(problems)


# ---------------------------------------------------------------------------------------------
# Findings


@dataclass(frozen=True)
class Code:
    """A frame or strategy name shown as code."""

    text: str


Finding = list[str | Code]


def mutex_share(facts: Facts, cell: Cell) -> float | None:
    summary = facts.summary(cell).get("mutex_share")
    if summary and summary.get("median") is not None:
        return float(summary["median"])
    return cell.profile.mutex_share


def _median(facts: Facts, cell: Cell, metric: str) -> float | None:
    summary = facts.summary(cell).get(metric)
    return float(summary["median"]) if summary and summary.get("median") is not None else None


def _side_by_side(facts: Facts, a: Cell, b: Cell) -> str:
    """`; mutex share 2.1% vs 11.4%, futex wait/op 1.2µs vs 3.4µs` for the figures both have."""
    parts = []
    for metric in ("mutex_share", "futex_wait_ns_per_op", "ctx_switches_per_op"):
        if metric == "mutex_share":
            va, vb = mutex_share(facts, a), mutex_share(facts, b)
        else:
            va, vb = _median(facts, a, metric), _median(facts, b, metric)
        if va is not None and vb is not None:
            unit = facts.units.get(metric)
            parts.append(
                f"{facts.label(metric)} {value_text(metric, va, unit)} vs "
                f"{value_text(metric, vb, unit)}"
            )
    return "; " + ", ".join(parts) if parts else ""


def _ratio_sentence(
    name_a: str,
    name_b: str,
    metric: str,
    entry: Mapping[str, Any],
    labels: Mapping[str, str],
    twin: bool = False,
) -> Finding:
    """`A: 0.95x the ops/s of B [95% CI …] (significant, p=…)`; `B (its twin)` when B is
    A's twin."""
    ratio, interval = ratio_texts(entry)
    p = entry.get("p_value")
    if p is None:
        significance = "no p-value"
    else:
        verdict = "significant" if entry.get("significant") else "not significant"
        significance = f"{verdict}, p={human_p(float(p))}"
        if not entry.get("significant") and entry.get("reason"):
            significance += f": {entry['reason']}"
    text: Finding = [Code(name_a), f": {ratio} the {labels.get(metric, metric)} of ", Code(name_b)]
    if twin:
        text.append(" (its twin)")
    text.append(f" [95% CI {interval}]" if interval else " (no interval)")
    text.append(f" ({significance})")
    return text


def findings(facts: Facts) -> list[Finding]:
    """Short statements computed from run.json (and the probes' files in the run directory,
    when there is one), most useful first."""
    run = facts.run
    out: list[Finding] = []
    if run.status != "complete":
        out.append([f"the run's status is {run.status}: figures cover the repeats that finished"])
    # Why a strategy is slower than its baseline, from the probe data (report/mechanism.py;
    # imported here: it builds on this module).
    from harness.report import mechanism

    # The headline metric even without a baseline (a page's Context leaves it out then).
    metric = ratio_metric(facts.doc, facts.columns)
    out += mechanism.findings(facts, metric)
    if metric is not None:
        out += _ratio_findings(facts, metric)
    out += _mutex_findings(facts)
    out += _grown_findings(facts)
    out.append(_failures_finding(facts))
    out += _probe_findings(facts)
    out += _with_probes_findings(run)
    return out


def compared_cell(facts: Facts, cell: Cell) -> Cell | None:
    """The cell `cell` is compared with (its twin's, or the baseline's) at its scenario and
    params; None when it is compared with nothing or the run has no such cell."""
    against = facts.run.baseline_of(cell)
    group = (cell.scenario, params_key(cell.params))
    return next(
        (
            c
            for c in facts.cells
            if c.strategy == against and (c.scenario, params_key(c.params)) == group
        ),
        None,
    )


def _ratio_findings(facts: Facts, metric: str) -> list[Finding]:
    """Per scenario and params: each strategy against its twin or the baseline, then the
    best of the others than the baseline against the worst, compared on their repeats
    (unless one is the other's twin: said already)."""
    baseline, name = facts.baseline, facts.name
    out: list[Finding] = []
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in facts.cells:
        groups.setdefault((cell.scenario, params_key(cell.params)), []).append(cell)
    for group in groups.values():
        base = next((c for c in group if c.strategy == baseline), None)
        for cell in group:
            against = compared_cell(facts, cell)
            entry = cell_comparison(facts.index, cell, metric)
            if against is not None and entry is not None and entry.get("ratio") is not None:
                twin = against.strategy != baseline
                sentence = _ratio_sentence(
                    name(cell), against.strategy, metric, entry, facts.labels, twin
                )
                sentence.append(_side_by_side(facts, cell, against))
                out.append(sentence)
        # The best and the worst of the other strategies, compared on their repeats.
        values = {id(c): metric_values(facts.cell_doc(c), metric) for c in group}
        others = [c for c in group if c is not base and values[id(c)]]
        if len(others) >= 2:
            better = next((m.better for m in facts.run.metrics if m.name == metric), "higher")
            ranked = sorted(others, key=lambda c: _median(facts, c, metric) or 0.0)
            worst, best = (ranked[0], ranked[-1]) if better != "lower" else (ranked[-1], ranked[0])
            # Unless the two are a pair compared already (one is the other's twin).
            paired = facts.run.baseline_of(best) == worst.strategy or (
                facts.run.baseline_of(worst) == best.strategy
            )
            if not paired and _median(facts, best, metric) != _median(facts, worst, metric):
                entry = compare_samples(values[id(worst)], values[id(best)], better)
                if entry.get("ratio") is not None:
                    sentence = _ratio_sentence(name(best), name(worst), metric, entry, facts.labels)
                    sentence.append(_side_by_side(facts, best, worst))
                    out.append(sentence)
    return out


def _mutex_findings(facts: Facts) -> list[Finding]:
    shares = [(mutex_share(facts, c), c) for c in facts.cells]
    known = [(s, c) for s, c in shares if s is not None]
    if len(known) < 2:
        return []
    high = max(known, key=lambda sc: sc[0])
    low = min(known, key=lambda sc: sc[0])
    return [
        [
            "mutex share (lock-related frames in the client's on-CPU samples): highest in ",
            Code(facts.name(high[1])),
            f" ({percent(high[0])}), lowest in ",
            Code(facts.name(low[1])),
            f" ({percent(low[0])})",
        ]
    ]


def _grown_findings(facts: Facts) -> list[Finding]:
    """The five cells whose top frame grew the most against their baseline."""
    grown = []
    for cell in facts.cells:
        if cell.profile.grew:
            top = max(cell.profile.grew, key=lambda g: g.delta)
            grown.append((top.delta, cell, top, cell.profile.diff_baseline))
    return [
        [
            Code(facts.name(cell)),
            f" vs {against or facts.baseline}: ",
            Code(top.frame),
            f" grew the most, from {percent(top.baseline_share)} to {percent(top.share)} "
            "of the samples",
        ]
        for _delta, cell, top, against in sorted(grown, key=lambda g: g[0], reverse=True)[:5]
    ]


def _failures_finding(facts: Facts) -> Finding:
    failed = [(c, len(c.failures)) for c in facts.cells if c.failures]
    if not failed:
        return ["no repeat failed"]
    total = sum(n for _, n in failed)
    runs = sum(len(c.repeats) + len(c.failures) for c in facts.cells)
    lost_repeats: Finding = [f"{total} of {runs} repeats failed ("]
    for i, (c, n) in enumerate(failed[:3]):
        lost_repeats += [", " if i else "", Code(facts.name(c)), f": {n}"]
    lost_repeats.append(f" and {len(failed) - 3} more cells)" if len(failed) > 3 else ")")
    return lost_repeats


def _probe_findings(facts: Facts) -> list[Finding]:
    """Each probe problem or loss once, with the cells it happened in (up to three named)."""
    problems: dict[str, dict[str, str]] = {}  # what -> cell name -> detail
    named = facts.run.named_probes()
    for cell in facts.cells:
        for probe_name, probe in cell.probes.items():
            for problem in probe_problems(as_json(probe), probe_name in named):
                problems.setdefault(f"probe {probe_name} {problem}", {})[facts.name(cell)] = ""
            if probe.lost_events:
                lost = f"probe {probe_name} lost events"
                problems.setdefault(lost, {})[facts.name(cell)] = f": {probe.lost_events}"
    out: list[Finding] = []
    for what, where in problems.items():
        said: Finding = [f"{what} ("]
        if len(where) > 3:
            said.append(f"{len(where)} cells")
        for i, (cell_name, detail) in enumerate(list(where.items()) if len(where) <= 3 else []):
            said += [", " if i else "", Code(cell_name), detail]
        said.append(")")
        out.append(said)
    return out


def _with_probes_findings(run: RunDoc) -> list[Finding]:
    """What the explain repeats' probes, and the probes of the overhead runs, cost in ops/s."""
    out: list[Finding] = []
    ratio = run.explain_ratio
    if ratio is not None and ratio.ratio is not None:
        out.append(
            [
                "with every probe (the explain repeats) the workload ran at "
                f"{paired_text(as_json(ratio)).plain} of its ops/s without the stack and "
                f"profile probes (paired by round, {ratio.n} rounds): see With probes"
            ]
        )
    if run.probe_overhead:
        parts = [
            f"{key} {human_ratio(v) if v is not None else DASH}"
            for key, v in run.probe_overhead.items()
        ]
        out.append(
            ["probe overhead, median ops/s with / without (geometric mean): " + ", ".join(parts)]
        )
    return out


def explain_text(config: Config) -> str:
    """What ran on which repeats, for the report's header."""
    count = config.explain_repeats
    if count is None:  # a run from before the split: every probe on every repeat
        return "none (every probe on every repeat)"
    measured = ", ".join(config.measurement_probes or []) or "no probe"
    if not count:
        return f"none; the figures' repeats carry {measured}"
    return (
        f"{count} a cell with every probe; the figures come from the measurement repeats, "
        f"which carry {measured}"
    )


def finding_text(finding: Finding) -> str:
    """Plain text of a finding (for tests and logs)."""
    return "".join(part.text if isinstance(part, Code) else part for part in finding)
