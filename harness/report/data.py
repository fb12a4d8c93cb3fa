"""What the HTML report and the Markdown summary share: reading run.json, which columns to
show, finding the flame graphs of a cell, and the findings computed from the data (the
figures are written by harness/format/, as in the terminal tables). Everything here is pure
except the reads of files inside the run directory."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.format.cells import cell_summary, param_text, varying_params
from harness.format.figures import ratio_texts, value_text
from harness.format.metrics import LEADING_METRICS, TRAILING_METRICS, ratio_metric, report_labels
from harness.format.notes import named_probes, probe_problem
from harness.format.numbers import DASH, TIMES, human_p, human_ratio, percent
from harness.probes import registry
from harness.probes.kind import FlameGraph
from harness.probes.overhead_pairs import paired_text
from harness.rundoc.files import run_file
from harness.stats import compare_cells, compare_samples, metric_values, params_key

# Probe and profile figures shown after the run's declared metrics, when some cell has them.
EXTRA_METRICS = tuple(registry.labels())
TOP_FRAMES = 10


def units(doc: Mapping[str, Any]) -> dict[str, str]:
    return {str(m["name"]): str(m.get("unit") or "") for m in doc.get("metrics") or []}


def columns(
    doc: Mapping[str, Any], cells: Sequence[Mapping[str, Any]]
) -> tuple[list[str], list[str]]:
    """(metric columns, declared metrics no cell reported).

    The run's declared metrics in their order, then the probe and profile figures present
    in some cell's summary. A run.json without declared metrics gets the terminal table's.
    """
    present = {name for cell in cells for name in cell_summary(cell)}
    declared = [str(m["name"]) for m in doc.get("metrics") or []]
    if not declared:
        declared = [
            n for n in (*LEADING_METRICS, *TRAILING_METRICS) if n in present or n == "ops_per_sec"
        ]
    shown = [n for n in declared if n in present]
    shown += [n for n in EXTRA_METRICS if n in present and n not in shown]
    return shown, [n for n in declared if n not in present]


def comparisons(doc: Mapping[str, Any], metric: str | None) -> list[Mapping[str, Any]]:
    """The run's comparisons; computed here only for a run.json written without them."""
    if "comparisons" in doc:
        return list(doc.get("comparisons") or [])
    baseline = (doc.get("config") or {}).get("baseline")
    if baseline and metric:
        return list(compare_cells(doc.get("cells") or [], baseline, [{"name": metric}]))
    return []


ComparisonKey = tuple[str, str, str, str]


def comparison_key(scenario: Any, strategy: Any, params: Any, metric: str) -> ComparisonKey:
    return str(scenario), str(strategy), params_key(params), metric


def comparison_index(
    entries: Sequence[Mapping[str, Any]],
) -> dict[ComparisonKey, Mapping[str, Any]]:
    return {
        comparison_key(
            e.get("scenario"), e.get("candidate"), e.get("params"), str(e.get("metric"))
        ): e
        for e in entries
    }


def cell_comparison(
    index: Mapping[ComparisonKey, Mapping[str, Any]], cell: Mapping[str, Any], metric: str
) -> Mapping[str, Any] | None:
    return index.get(
        comparison_key(cell.get("scenario"), cell.get("strategy"), cell.get("params"), metric)
    )


def scenarios(cells: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for cell in cells:
        groups.setdefault(str(cell.get("scenario")), []).append(cell)
    return groups


def cell_label(cell: Mapping[str, Any], params: Sequence[str], scenario: bool = False) -> str:
    """`tokio-timeout concurrency=256` (with ` [slow-tail]` when the run has several scenarios)."""
    parts = [str(cell.get("strategy"))]
    parts += [f"{n}={param_text((cell.get('params') or {}).get(n))}" for n in params]
    if scenario:
        parts.append(f"[{cell.get('scenario')}]")
    return " ".join(parts)


class Labeller:
    """Labels of the run's cells: the strategy and the params that vary over the run."""

    def __init__(self, cells: Sequence[Mapping[str, Any]]) -> None:
        self.params = varying_params(cells)
        self.scenario = len({str(c.get("scenario")) for c in cells}) > 1

    def __call__(self, cell: Mapping[str, Any]) -> str:
        return cell_label(cell, self.params, self.scenario)


def command_text(config: Mapping[str, Any]) -> str | None:
    command = config.get("command")
    if isinstance(command, list) and command:
        return shlex.join(str(part) for part in command)
    return None


def host_text(host: Mapping[str, Any]) -> str:
    on_off: dict[Any, str] = {True: "on", False: "off"}
    return (
        f"{host.get('hostname')} · {host.get('cpu_model')} · {host.get('logical_cpus')} CPUs · "
        f"kernel {host.get('kernel')} · governor {host.get('governor')} · "
        f"SMT {on_off.get(host.get('smt'), 'unknown')} · "
        f"turbo {on_off.get(host.get('turbo'), 'unknown')}"
    )


def repeats_text(config: Mapping[str, Any]) -> str:
    if config.get("repeats") is None:
        return "repeats not recorded"
    plural = "" if config["repeats"] == 1 else "s"
    return (
        f"{config['repeats']} repeat{plural} {TIMES} {config.get('duration_s')} s "
        f"(warm-up {config.get('warmup_s')} s, {config.get('order') or 'unknown'} order)"
    )


def probes_text(config: Mapping[str, Any]) -> str:
    probes = config.get("probes")
    if not probes:
        return "none"
    return ", ".join(str(p) for p in probes)


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


def profile_notes(profile: Mapping[str, Any]) -> list[str]:
    notes = profile.get("notes") or []
    return [str(n) for n in notes] if isinstance(notes, list) else [str(notes)]


def _missing_reason(
    kind: FlameGraph, cell: Mapping[str, Any], profile: Mapping[str, Any], baseline: str | None
) -> str:
    if kind.differential and baseline is not None and cell.get("strategy") == baseline:
        return BASELINE_CELL
    if not profile:
        return "run.json has no profile for this cell (the profiler did not run)"
    notes = [n for n in profile_notes(profile) if note_kind(n) in (kind.key, None)]
    return "; ".join(notes) if notes else "run.json gives no reason"


def flames(run_dir: Path, cell: Mapping[str, Any], baseline: str | None) -> list[Flame]:
    profile = cell.get("profile") or {}
    out = []
    for kind in FLAME_KINDS:
        if not kind.always and kind.probe not in (cell.get("probes") or {}):
            continue
        flame = Flame(kind)
        path = profile.get(kind.svg_key)
        if kind.folded_key and profile.get(kind.folded_key):
            flame.folded_path = str(profile[kind.folded_key])
            flame.folded_href = run_file(run_dir, flame.folded_path)
            if flame.folded_href is None:
                flame.problems.append(
                    f"the folded stacks {flame.folded_path} named in run.json are not in the "
                    "run directory"
                )
        if path:
            flame.path = str(path)
            flame.href = run_file(run_dir, flame.path)
            if flame.href is None:
                flame.reason = f"{flame.path} is named in run.json but is not in the run directory"
        else:
            flame.reason = _missing_reason(kind, cell, profile, baseline)
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
    """`unavailable: ...`, `failed: ...` (once per reason) of one probe; `does not apply: ...`
    only when the user named it (format/notes.py)."""
    top = probe_problem(probe, named)  # no repeat produced output: the last one's reason
    problems: dict[str, None] = {}
    if top is not None:
        problems[f"{top[0]}: {top[1]}"] = None
    for r in probe.get("repeats") or []:
        problem = probe_problem(r, named)
        if problem is not None and problem != top:
            problems[f"{problem[0]} in repeat {r.get('repeat')}: {problem[1]}"] = None
    return list(problems)


# ---------------------------------------------------------------------------------------------
# Findings


@dataclass(frozen=True)
class Code:
    """A frame or strategy name shown as code."""

    text: str


Finding = list[str | Code]


def mutex_share(cell: Mapping[str, Any]) -> float | None:
    summary = cell_summary(cell).get("mutex_share")
    if summary and summary.get("median") is not None:
        return float(summary["median"])
    value = (cell.get("profile") or {}).get("mutex_share")
    return float(value) if isinstance(value, int | float) else None


def _median(cell: Mapping[str, Any], metric: str) -> float | None:
    summary = cell_summary(cell).get(metric)
    return float(summary["median"]) if summary and summary.get("median") is not None else None


def _side_by_side(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    units: Mapping[str, str],
    labels: Mapping[str, str],
) -> str:
    """`; mutex share 2.1% vs 11.4%, futex wait/op 1.2µs vs 3.4µs` for the figures both have."""
    parts = []
    for metric in ("mutex_share", "futex_wait_ns_per_op", "ctx_switches_per_op"):
        va = mutex_share(a) if metric == "mutex_share" else _median(a, metric)
        vb = mutex_share(b) if metric == "mutex_share" else _median(b, metric)
        if va is not None and vb is not None:
            unit = units.get(metric)
            parts.append(
                f"{labels.get(metric, metric)} {value_text(metric, va, unit)} vs "
                f"{value_text(metric, vb, unit)}"
            )
    return "; " + ", ".join(parts) if parts else ""


def _ratio_sentence(
    name_a: str,
    name_b: str,
    metric: str,
    entry: Mapping[str, Any],
    labels: Mapping[str, str],
) -> Finding:
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
    text.append(f" [95% CI {interval}]" if interval else " (no interval)")
    text.append(f" ({significance})")
    return text


def findings(doc: Mapping[str, Any], run_dir: Path | None = None) -> list[Finding]:
    """Short statements computed from run.json (and the probes' files in run_dir), most
    useful first."""
    cells = list(doc.get("cells") or [])
    name = Labeller(cells)
    shown, _ = columns(doc, cells)
    metric = ratio_metric(doc, shown)
    out: list[Finding] = []

    status = str(doc.get("status"))
    if status != "complete":
        out.append([f"the run's status is {status}: figures cover the repeats that finished"])
    # Why a strategy is slower than its baseline, from the probe data (report/mechanism.py;
    # imported here: it builds on this module).
    from harness.report import mechanism

    out += mechanism.findings(doc, run_dir, name, metric)
    if metric is not None:
        out += _ratio_findings(doc, cells, metric, name)
    out += _mutex_findings(cells, name)
    out += _grown_findings(cells, (doc.get("config") or {}).get("baseline"), name)
    out.append(_failures_finding(cells, name))
    out += _probe_findings(doc, cells, name)
    out += _with_probes_findings(doc)
    return out


def _ratio_findings(
    doc: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], metric: str, name: Labeller
) -> list[Finding]:
    """Per scenario and params: each strategy against the baseline, then the best of the
    others against the worst, compared on their repeats."""
    baseline = (doc.get("config") or {}).get("baseline")
    unit_of = units(doc)
    labels = report_labels(doc)
    index = comparison_index(comparisons(doc, metric))
    out: list[Finding] = []
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for cell in cells:
        key = (str(cell.get("scenario")), params_key(cell.get("params")))
        groups.setdefault(key, []).append(cell)
    for group in groups.values():
        base = next((c for c in group if c.get("strategy") == baseline), None)
        for cell in group:
            if cell is base:
                continue
            entry = cell_comparison(index, cell, metric)
            if base is not None and entry is not None and entry.get("ratio") is not None:
                sentence = _ratio_sentence(name(cell), str(baseline), metric, entry, labels)
                sentence.append(_side_by_side(cell, base, unit_of, labels))
                out.append(sentence)
        # The best and the worst of the other strategies, compared on their repeats.
        others = [c for c in group if c is not base and metric_values(c, metric)]
        if len(others) >= 2:
            better = next(
                (m.get("better") for m in doc.get("metrics") or [] if m.get("name") == metric),
                "higher",
            )
            ranked = sorted(others, key=lambda c: _median(c, metric) or 0.0)
            worst, best = (ranked[0], ranked[-1]) if better != "lower" else (ranked[-1], ranked[0])
            if _median(best, metric) != _median(worst, metric):
                entry = compare_samples(
                    metric_values(worst, metric), metric_values(best, metric), better
                )
                if entry.get("ratio") is not None:
                    sentence = _ratio_sentence(name(best), name(worst), metric, entry, labels)
                    sentence.append(_side_by_side(best, worst, unit_of, labels))
                    out.append(sentence)
    return out


def _mutex_findings(cells: Sequence[Mapping[str, Any]], name: Labeller) -> list[Finding]:
    shares = [(mutex_share(c), c) for c in cells]
    known = [(s, c) for s, c in shares if s is not None]
    if len(known) < 2:
        return []
    high = max(known, key=lambda sc: sc[0])
    low = min(known, key=lambda sc: sc[0])
    return [
        [
            "mutex share (lock-related frames in the client's on-CPU samples): highest in ",
            Code(name(high[1])),
            f" ({percent(high[0])}), lowest in ",
            Code(name(low[1])),
            f" ({percent(low[0])})",
        ]
    ]


def _grown_findings(
    cells: Sequence[Mapping[str, Any]], baseline: Any, name: Labeller
) -> list[Finding]:
    """The five cells whose top frame grew the most against their baseline."""
    grown = []
    for cell in cells:
        profile = cell.get("profile") or {}
        grew = [g for g in profile.get("grew") or [] if g.get("delta") is not None]
        if grew:
            top = max(grew, key=lambda g: float(g["delta"]))
            grown.append((float(top["delta"]), cell, top, profile.get("diff_baseline")))
    return [
        [
            Code(name(cell)),
            f" vs {against or baseline}: ",
            Code(str(top.get("frame"))),
            " grew the most, from "
            f"{percent(float(top.get('baseline_share') or 0.0))} to "
            f"{percent(float(top.get('share') or 0.0))} of the samples",
        ]
        for _delta, cell, top, against in sorted(grown, key=lambda g: g[0], reverse=True)[:5]
    ]


def _failures_finding(cells: Sequence[Mapping[str, Any]], name: Labeller) -> Finding:
    failed = [(c, len(c.get("failures") or [])) for c in cells if c.get("failures")]
    if not failed:
        return ["no repeat failed"]
    total = sum(n for _, n in failed)
    runs = sum(len(c.get("repeats") or []) + len(c.get("failures") or []) for c in cells)
    lost_repeats: Finding = [f"{total} of {runs} repeats failed ("]
    for i, (c, n) in enumerate(failed[:3]):
        lost_repeats += [", " if i else "", Code(name(c)), f": {n}"]
    lost_repeats.append(f" and {len(failed) - 3} more cells)" if len(failed) > 3 else ")")
    return lost_repeats


def _probe_findings(
    doc: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], name: Labeller
) -> list[Finding]:
    """Each probe problem or loss once, with the cells it happened in (up to three named)."""
    problems: dict[str, dict[str, str]] = {}  # what -> cell name -> detail
    named = named_probes(doc)
    for cell in cells:
        for probe_name, probe in (cell.get("probes") or {}).items():
            for problem in probe_problems(probe, probe_name in named):
                problems.setdefault(f"probe {probe_name} {problem}", {})[name(cell)] = ""
            if probe.get("lost_events"):
                lost = f"probe {probe_name} lost events"
                problems.setdefault(lost, {})[name(cell)] = f": {probe['lost_events']}"
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


def _with_probes_findings(doc: Mapping[str, Any]) -> list[Finding]:
    """What the explain repeats' probes, and the probes of the overhead runs, cost in ops/s."""
    out: list[Finding] = []
    ratio = doc.get("explain_ratio") or {}
    if ratio.get("ratio") is not None:
        out.append(
            [
                "with every probe (the explain repeats) the workload ran at "
                f"{paired_text(ratio).plain} of its ops/s without the stack and profile probes "
                f"(paired by round, {ratio['n']} rounds): see With probes"
            ]
        )
    overhead = doc.get("probe_overhead")
    if overhead:
        parts = [
            f"{key} {human_ratio(float(v)) if v is not None else DASH}"
            for key, v in overhead.items()
        ]
        out.append(
            ["probe overhead, median ops/s with / without (geometric mean): " + ", ".join(parts)]
        )
    return out


def explain_text(config: Mapping[str, Any]) -> str:
    """What ran on which repeats, for the report's header."""
    count = config.get("explain_repeats")
    if count is None:  # a run from before the split: every probe on every repeat
        return "none (every probe on every repeat)"
    measured = ", ".join(config.get("measurement_probes") or []) or "no probe"
    if not count:
        return f"none; the figures' repeats carry {measured}"
    return (
        f"{count} a cell with every probe; the figures come from the measurement repeats, "
        f"which carry {measured}"
    )


def finding_text(finding: Finding) -> str:
    """Plain text of a finding (for tests and logs)."""
    return "".join(part.text if isinstance(part, Code) else part for part in finding)
