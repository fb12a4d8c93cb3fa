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

from harness.charts.report import report_charts
from harness.format.cells import by_scenario, param_text, varying_params
from harness.format.cpu_notes import cpu_notes
from harness.format.figures import p_text, ratio_texts, summary_texts
from harness.format.names import printable
from harness.format.numbers import DASH
from harness.format.twins import TWIN_MARK, missing_twins, twin_clause, vs_column
from harness.report import data
from harness.report.data import Code, Facts, Finding, write_page
from harness.rundoc.files import run_file
from harness.rundoc.model import Cell, RunDoc
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
    few as possible so the pasted source stays readable; a newline or other control
    character as its escape (`\\n`), which would end a table's row."""
    out = _SPECIAL.sub(r"\\\1", printable(value))
    out = _EDGE_UNDERSCORE.sub(r"\\_", out)
    if "](" in out or "]:" in out:
        out = out.replace("[", "\\[").replace("]", "\\]")
    return out


def code(value: Any) -> str:
    """A code span that survives backticks in the text and `|` in table cells; control
    characters escaped as in `text`."""
    raw = printable(value).replace("|", "\\|")
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


class Summary(Facts):
    """summary.md of one run: its facts (report/data.py, built as for report.html) and the
    write-up's lines so far."""

    run_dir: Path

    def __init__(self, run: RunDoc, run_dir: Path) -> None:
        super().__init__(run, run_dir)
        self.lines: list[str] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def render(self) -> str:
        run = self.run
        self.add(f"## {text(run.suite)}: benchmark results (run {code(run.run_id)})", "")
        self.charts()
        self.what_was_run()
        self.add("### Results", "")
        if not self.cells:
            self.add("No cells in this run.", "")
        groups = by_scenario(self.cells)
        for scenario, group in groups.items():
            if len(groups) > 1:
                self.add(f"**scenario {text(scenario)}**", "")
            self.table(group)
        for note in missing_twins(run):
            self.add(f"> note: {text(note)}", "")
        self.add(text(self.legend()), "")
        self.add("### Findings", "")
        self.add(*(f"- {inline(f)}" for f in data.findings(self)), "")
        self.flame_links()
        return "\n".join(self.lines).rstrip() + "\n"

    def charts(self) -> None:
        """Charts first: each scenario's ratios to the baseline and latency percentiles
        (harness/charts/), and the CPU-per-op note."""
        for chart in report_charts(self.doc):
            href = run_file(self.run_dir, chart.path)
            if href is not None:
                self.add(f"![{text(chart.title)}]({href})", "")
        varying = varying_params(self.cell_docs)
        for note in cpu_notes(self.entries, self.metric, self.labels, varying):
            self.add(f"> {text(note)}", "")
        for note in stability_notes(self.cell_docs, self.labels):
            self.add(f"> {text(note)}", "")

    def what_was_run(self) -> None:
        run, config, git = self.run, self.config, self.run.git
        command = data.command_text(config)
        facts = [
            f"- command: {code(command) if command else 'not recorded'}",
            f"- machine: {text(data.host_text(run.host))}",
            f"- git: {code(git.commit[:12]) if git.commit else 'no commit'}"
            + (" (dirty tree)" if git.dirty else ""),
            f"- {text(data.repeats_text(config))}",
            f"- probes: {text(data.probes_text(config))}"
            + (", probe overhead measured" if config.probe_overhead else ""),
            f"- baseline: {code(self.baseline) if self.baseline else 'none'}",
            *(
                ["- twins: " + ", ".join(f"{code(s)} vs {code(t)}" for s, t in twins.items())]
                if (twins := config.compare_with)
                else []
            ),
            f"- status: {text(run.status)} (started {text(run.started_at)},"
            f" finished {text(run.finished_at)})",
        ]
        if config.mutex_patterns:
            facts.append("- mutex patterns: " + ", ".join(code(p) for p in config.mutex_patterns))
        self.add("**What was run**", "", *facts, "")

    def table(self, group: Sequence[Cell]) -> None:
        params = varying_params(self.cell_docs)
        summaries = [self.summary(c) for c in group]
        present = {name for s in summaries for name in s}
        lead = [self.metric] if self.metric and self.metric in present else []
        side = [m for m in SIDE_METRICS if m in present and m not in lead]
        vs = vs_column(self.run, group) if self.metric else None
        header = ["strategy", *(text(p) for p in params)]
        header += [f"{text(self.label(m))} [95% CI]" for m in lead]
        if vs is not None:
            header += [f"{text(vs.heading)} [95% CI]", "p"]
        header += [text(self.label(m)) for m in side]
        header.append("runs")
        self.add(row(header), row(["---"] + ["---:"] * (len(header) - 1)))
        for cell, summary in zip(group, summaries, strict=True):
            values = [code(cell.strategy)]
            values += [text(param_text(cell.params.get(p))) for p in params]
            values += [figure(m, summary.get(m), self.units.get(m)) for m in lead]
            if vs is not None and self.metric is not None:
                if vs.uncompared(cell.strategy):
                    values += ["baseline", ""]
                else:
                    entry = data.cell_comparison(self.index, cell, self.metric)
                    mark = f" {TWIN_MARK}" if vs.twin(cell.strategy) is not None else ""
                    values += [ratio(entry) + mark, text(p_text(entry))]
            values += [figure(m, summary.get(m), self.units.get(m)) for m in side]
            ok, failed = cell.runs
            values.append(f"{ok}/{ok + failed}")
            self.add(row(values))
        self.add("")
        footnote = vs.footnote() if vs is not None else None
        if footnote is not None:
            self.add(text(footnote), "")

    def legend(self) -> str:
        parts = ["median of the repeats [95% interval of the median, from order statistics]"]
        if self.metric and self.baseline:
            parts.append(
                f"vs {self.baseline}: ratio of {self.label(self.metric)} medians to the baseline "
                f"at the same params{twin_clause(self.run)} [95% bootstrap interval]; * "
                "two-sided Mann-Whitney U p < 0.05"
            )
        parts.append("mutex share: lock-related frames in the client's on-CPU samples")
        ns = sorted({len(c.repeats) for c in self.cells})
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


def render(run: RunDoc, run_dir: Path) -> str:
    return Summary(run, run_dir).render()


def write_summary(run_dir: Path, run: RunDoc | None = None) -> Path:
    """Write `<run_dir>/summary.md`; return its path."""
    return write_page(Path(run_dir), "summary.md", render, run)
