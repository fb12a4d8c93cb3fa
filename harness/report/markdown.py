"""`summary.md`: a write-up of a run to paste into a pull request.

What was run (command, machine, repeats, durations), the results table with intervals, ratios
and significance, findings computed from run.json (nothing else), and relative links to the
flame graphs and the full HTML report.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.base.writes import write_atomic
from harness.charts.report import report_charts
from harness.format.cells import cell_summary, param_text, varying_params
from harness.format.cpu_notes import cpu_notes
from harness.format.figures import p_text, ratio_texts, summary_texts
from harness.format.metrics import ratio_metric, report_labels
from harness.format.numbers import DASH
from harness.report import data
from harness.report.data import Code, Finding, Labeller
from harness.rundoc.files import run_file
from harness.rundoc.jsonfile import as_json, load_run
from harness.stability import stability_notes

# Figures next to the headline metric, when some cell of the scenario has them.
SIDE_METRICS = ("latency_ns.p99", "mutex_share", "futex_wait_ns_per_op", "ctx_switches_per_op")
# Escaped wherever they appear: they start code, emphasis, HTML, table cells, strike-through.
_SPECIAL = re.compile(r"([\\`*<>|~])")
# Escaped where they could start emphasis or a link: `_` at a word edge (snake_case inside a
# word is literal in GitHub Markdown); `[` and `]` when the text has `](` or `]:`.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def text(value: Any) -> str:
    """Plain text with Markdown's special characters escaped (safe in table cells too), as
    few as possible so the pasted source stays readable."""
    out = _SPECIAL.sub(r"\\\1", str(value))
    out = _EDGE_UNDERSCORE.sub(r"\\_", out)
    if "](" in out or "]:" in out:
        out = out.replace("[", "\\[").replace("]", "\\]")
    return out


def code(value: Any) -> str:
    """A code span that survives backticks in the text and `|` in table cells."""
    raw = str(value).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", raw)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if raw.startswith("`") or raw.endswith("`") else ""
    return f"{fence}{pad}{raw}{pad}{fence}"


def inline(finding: Finding) -> str:
    return "".join(code(p.text) if isinstance(p, Code) else text(p) for p in finding)


def figure(metric: str, summary: Mapping[str, Any] | None, unit: str | None) -> str:
    median, interval = summary_texts(metric, summary, unit)
    return text(f"{median} [{interval}]" if interval else median)


def ratio(entry: Mapping[str, Any] | None) -> str:
    value, interval = ratio_texts(entry)
    if entry is None or entry.get("ratio") is None:
        return DASH
    mark = " \\*" if entry.get("significant") else ""
    return text(value) + mark + (f" [{text(interval)}]" if interval else "")


def row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


class Summary:
    def __init__(self, doc: Mapping[str, Any], run_dir: Path) -> None:
        self.doc = doc
        self.run_dir = run_dir
        self.cells: list[Mapping[str, Any]] = list(doc.get("cells") or [])
        self.config: Mapping[str, Any] = doc.get("config") or {}
        self.baseline: str | None = self.config.get("baseline")
        self.units = data.units(doc)
        self.labels = report_labels(doc)
        shown, _ = data.columns(doc, self.cells)
        self.metric = ratio_metric(doc, shown)
        self.index = data.comparison_index(data.comparisons(doc, self.metric))
        self.name = Labeller(self.cells)
        self.lines: list[str] = []

    def label(self, metric: str) -> str:
        return self.labels.get(metric, metric)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def render(self) -> str:
        doc = self.doc
        self.add(
            f"## {text(doc.get('suite'))}: benchmark results (run {code(doc.get('run_id'))})", ""
        )
        self.charts()
        self.what_was_run()
        self.add("### Results", "")
        if not self.cells:
            self.add("No cells in this run.", "")
        several = len(data.scenarios(self.cells)) > 1
        for scenario, group in data.scenarios(self.cells).items():
            if several:
                self.add(f"**scenario {text(scenario)}**", "")
            self.table(group)
        self.add(text(self.legend()), "")
        self.add("### Findings", "")
        self.add(*(f"- {inline(f)}" for f in data.findings(doc, self.run_dir)), "")
        self.flame_links()
        return "\n".join(self.lines).rstrip() + "\n"

    def charts(self) -> None:
        """Charts first: each scenario's ratios to the baseline and latency percentiles
        (harness/charts/), and the CPU-per-op note."""
        for chart in report_charts(self.doc):
            href = run_file(self.run_dir, chart.path)
            if href is not None:
                self.add(f"![{text(chart.title)}]({href})", "")
        entries = data.comparisons(self.doc, self.metric)
        for note in cpu_notes(entries, self.metric, self.labels, varying_params(self.cells)):
            self.add(f"> {text(note)}", "")
        for note in stability_notes(self.cells, self.labels):
            self.add(f"> {text(note)}", "")

    def what_was_run(self) -> None:
        config, host, git = self.config, self.doc.get("host") or {}, self.doc.get("git") or {}
        command = data.command_text(config)
        commit = git.get("commit")
        facts = [
            f"- command: {code(command) if command else 'not recorded'}",
            f"- machine: {text(data.host_text(host))}",
            f"- git: {code(str(commit)[:12]) if commit else 'no commit'}"
            + (" (dirty tree)" if git.get("dirty") else ""),
            f"- {text(data.repeats_text(config))}",
            f"- probes: {text(data.probes_text(config))}"
            + (", probe overhead measured" if config.get("probe_overhead") else ""),
            f"- baseline: {code(self.baseline) if self.baseline else 'none'}",
            f"- status: {text(self.doc.get('status'))} (started {text(self.doc.get('started_at'))},"
            f" finished {text(self.doc.get('finished_at'))})",
        ]
        patterns = config.get("mutex_patterns")
        if patterns:
            facts.append("- mutex patterns: " + ", ".join(code(p) for p in patterns))
        self.add("**What was run**", "", *facts, "")

    def table(self, group: Sequence[Mapping[str, Any]]) -> None:
        params = varying_params(self.cells)
        summaries = [cell_summary(c) for c in group]
        present = {name for s in summaries for name in s}
        lead = [self.metric] if self.metric and self.metric in present else []
        side = [m for m in SIDE_METRICS if m in present and m not in lead]
        against = (
            self.baseline
            if self.metric and any(c.get("strategy") == self.baseline for c in group)
            else None
        )
        header = ["strategy", *(text(p) for p in params)]
        header += [f"{text(self.label(m))} [95% CI]" for m in lead]
        if against is not None:
            header += [f"vs {text(against)} [95% CI]", "p"]
        header += [text(self.label(m)) for m in side]
        header.append("runs")
        self.add(row(header), row(["---"] + ["---:"] * (len(header) - 1)))
        for cell, summary in zip(group, summaries, strict=True):
            values = [code(cell.get("strategy"))]
            values += [text(param_text((cell.get("params") or {}).get(p))) for p in params]
            values += [figure(m, summary.get(m), self.units.get(m)) for m in lead]
            if against is not None and self.metric is not None:
                if cell.get("strategy") == against:
                    values += ["baseline", ""]
                else:
                    entry = data.cell_comparison(self.index, cell, self.metric)
                    values += [ratio(entry), text(p_text(entry))]
            values += [figure(m, summary.get(m), self.units.get(m)) for m in side]
            ok, failed = len(cell.get("repeats") or []), len(cell.get("failures") or [])
            values.append(f"{ok}/{ok + failed}")
            self.add(row(values))
        self.add("")

    def legend(self) -> str:
        parts = ["median of the repeats [95% interval of the median, from order statistics]"]
        if self.metric and self.baseline:
            parts.append(
                f"vs {self.baseline}: ratio of {self.label(self.metric)} medians to the baseline "
                "at the same params [95% bootstrap interval]; * two-sided Mann-Whitney "
                "U p < 0.05"
            )
        parts.append("mutex share: lock-related frames in the client's on-CPU samples")
        ns = sorted({len(c.get("repeats") or []) for c in self.cells})
        if ns and ns[0] <= 5:
            parts.append(
                f"with {ns[0]} repeats the interval is [min{DASH}max] and covers the median "
                "with less than 95%"
            )
        return "; ".join(parts) + "."

    def flame_links(self) -> None:
        self.add("### Flame graphs", "")
        report = run_file(self.run_dir, "report.html")
        where = f"Paths are relative to the run directory {code(self.run_dir.name)}"
        self.add(where + (f"; the full report is [report.html]({report})." if report else "."), "")
        for cell in self.cells:
            flames = data.flames(self.run_dir, cell, self.baseline)
            links = [f"[{text(f.kind.title)}]({f.href})" for f in flames if f.href]
            missing = [text(gap) for gap in data.flame_gaps(flames, skip_baseline_diff=True)]
            line = f"- {code(self.name(cell))}: " + (", ".join(links) if links else "none")
            if missing:
                line += " (" + "; ".join(missing) + ")"
            self.add(line)
        self.add("")


def render(doc: Mapping[str, Any], run_dir: Path) -> str:
    return Summary(doc, run_dir).render()


def write_summary(run_dir: Path) -> Path:
    """Write `<run_dir>/summary.md` from `<run_dir>/run.json`; return its path."""
    run_dir = Path(run_dir)
    doc = as_json(load_run(run_dir))
    path = run_dir / "summary.md"
    write_atomic(path, render(doc, run_dir))
    return path
