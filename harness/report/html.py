"""`report.html`: one self-contained page per run (inline CSS, no script, no CDN, no web
fonts), readable offline straight from the run directory.

Every figure comes from run.json; links are relative to the run directory and are written only
for files that exist there. Anything missing (a probe that did not run, a flame graph that was
not made) is stated with its reason, never left out silently.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.base.writes import write_atomic
from harness.charts.report import report_charts
from harness.format.cells import cell_summary, param_text, varying_params
from harness.format.cpu_notes import cpu_notes
from harness.format.figures import p_text, ratio_texts, summary_texts, value_text
from harness.format.metrics import ratio_metric, report_labels
from harness.format.notes import STATUS_NOTES, named_probes, notes, probe_notes
from harness.format.numbers import DASH, TIMES, human, human_p, human_ratio, percent
from harness.probes import bpfstats, registry
from harness.probes.overhead_pairs import (
    explain_results,
    overhead_cpu_shares,
    paired_text,
    share_median,
)
from harness.report import data
from harness.report.data import Code, Finding, Flame, Labeller
from harness.rundoc.files import run_file
from harness.rundoc.jsonfile import as_json, load_run
from harness.stability import stability_notes
from harness.stats import CONFIDENCE

CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
       sans-serif; color: #1f2328; margin: 0 auto; max-width: 1500px; padding: 1em 2em 4em; }
h1 { font-size: 1.6em; margin: .4em 0; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
h4 { font-size: 1em; margin: 1em 0 .3em; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono",
       monospace; font-size: 90%; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; white-space: pre-wrap; }
a { color: #0969da; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15em 1.2em; margin: 0; }
dl.facts dt { color: #59636e; }
dl.facts dd { margin: 0; }
.status { display: inline-block; padding: 0 .5em; border-radius: 1em; font-weight: 600; }
.status-complete { background: #dafbe1; color: #116329; }
.status-partial, .status-interrupted, .status-running { background: #fff8c5; color: #7d4e00; }
.status-failed { background: #ffebe9; color: #a40e26; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: .4em 0; }
th, td { padding: .3em .7em; border-bottom: 1px solid #d8dee4; text-align: right;
         vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; white-space: nowrap; }
th.l, td.l { text-align: left; }
td.frame { text-align: left; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas,
           monospace; font-size: 90%; word-break: break-all; max-width: 70ch; }
.med { white-space: nowrap; }
.ci { display: block; color: #59636e; font-size: 85%; white-space: nowrap; }
.better { color: #1a7f37; font-weight: 600; }
.worse { color: #cf222e; font-weight: 600; }
.changed { color: #9a6700; font-weight: 600; }
.dim { color: #59636e; }
.missing, .note { color: #7d4e00; }
.missing::before, .note::before { content: "\\26A0\\FE0E  "; }
.failure { color: #a40e26; }
.flames { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr));
          gap: 1em; }
figure.flame { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: .5em; }
figure.flame figcaption { margin-bottom: .3em; }
figure.flame img { width: 100%; height: auto; display: block; background: #fff; }
section.cell { margin-top: 2.5em; }
figure.chart { margin: 1em 0; max-width: 100%; }
figure.chart img { max-width: 100%; height: auto; display: block; }
nav ul { columns: 3 22em; }
footer { margin-top: 3em; color: #59636e; font-size: 90%; }
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def inline(finding: Finding) -> str:
    return "".join(
        f"<code>{esc(part.text)}</code>" if isinstance(part, Code) else esc(part)
        for part in finding
    )


def figure_cell(metric: str, summary: Mapping[str, Any] | None, unit: str | None) -> str:
    median, interval = summary_texts(metric, summary, unit)
    ci = f'<span class="ci">[{esc(interval)}]</span>' if interval else ""
    return f'<td><span class="med">{esc(median)}</span>{ci}</td>'


def ratio_cell(entry: Mapping[str, Any] | None) -> str:
    ratio, interval = ratio_texts(entry)
    if entry is None or entry.get("ratio") is None:
        reason = entry.get("reason") if entry else "no comparison in run.json"
        return f'<td title="{esc(reason)}"><span class="dim">{DASH}</span></td>'
    verdict = str(entry.get("verdict") or "")
    mark = ""
    if entry.get("significant"):
        mark = f' <span class="{esc(verdict)}" title="p &lt; 0.05: {esc(verdict)}">*</span>'
    ci = f'<span class="ci">[{esc(interval)}]</span>' if interval else ""
    return f'<td><span class="med">{esc(ratio)}{mark}</span>{ci}</td>'


def runs_cell(cell: Mapping[str, Any]) -> str:
    ok, failed = len(cell.get("repeats") or []), len(cell.get("failures") or [])
    cls = ' class="failure"' if failed else ""
    return f"<td{cls}>{ok}/{ok + failed}</td>"


class Page:
    """Builds report.html for one run document."""

    def __init__(self, doc: Mapping[str, Any], run_dir: Path) -> None:
        self.doc = doc
        self.run_dir = run_dir
        self.cells: list[Mapping[str, Any]] = list(doc.get("cells") or [])
        self.config: Mapping[str, Any] = doc.get("config") or {}
        self.baseline: str | None = self.config.get("baseline")
        self.units = data.units(doc)
        self.labels = report_labels(doc)
        self.columns, self.unreported = data.columns(doc, self.cells)
        self.metric = ratio_metric(doc, self.columns) if self.baseline else None
        self.entries = data.comparisons(doc, self.metric)
        self.index = data.comparison_index(self.entries)
        self.name = Labeller(self.cells)
        self.anchors = {id(cell): f"cell-{i + 1}" for i, cell in enumerate(self.cells)}
        self.out: list[str] = []

    def add(self, *parts: str) -> None:
        self.out.extend(parts)

    def label(self, metric: str) -> str:
        return self.labels.get(metric, metric)

    def anchor(self, cell: Mapping[str, Any]) -> str:
        return self.anchors[id(cell)]

    # -- page ---------------------------------------------------------------------------------

    def render(self) -> str:
        title = f"{self.doc.get('suite')} · run {self.doc.get('run_id')}"
        self.add(
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>",
            f"<style>{CSS}</style></head><body>",
        )
        self.header(title)
        self.charts()
        self.contents()
        self.summary()
        self.findings()
        self.plots()
        self.failures()
        self.overhead()
        self.explain()
        for cell in self.cells:
            self.cell_section(cell)
        self.add(
            "<footer>Written by <code>harness</code> from run.json; every link is relative to "
            "the run directory. Flame graphs open interactive (click to zoom, Ctrl-F to search)."
            "</footer>",
            "</body></html>",
        )
        return "\n".join(self.out) + "\n"

    def header(self, title: str) -> None:
        doc, config = self.doc, self.config
        status = str(doc.get("status"))
        git = doc.get("git") or {}
        host = doc.get("host") or {}
        self.add(
            f"<header><h1>{esc(title)} "
            f'<span class="status status-{esc(status)}">{esc(status)}</span></h1>'
        )
        if status in STATUS_NOTES:
            self.add(f'<p class="note">status {esc(status)}: {esc(STATUS_NOTES[status][1])}</p>')
        commit = git.get("commit")
        facts: list[tuple[str, str]] = [
            ("suite", esc(doc.get("suite"))),
            ("run", f"<code>{esc(doc.get('run_id'))}</code>"),
            ("started", f"{esc(doc.get('started_at'))}, finished {esc(doc.get('finished_at'))}"),
            ("host", esc(data.host_text(host))),
            (
                "git commit",
                (f"<code>{esc(commit)}</code>" if commit else "no commit")
                + (" (dirty tree)" if git.get("dirty") else ""),
            ),
            ("repeats", esc(data.repeats_text(config))),
            ("duration", f"{esc(config.get('duration_s'))} s per repeat"),
            ("warm-up", f"{esc(config.get('warmup_s'))} s"),
            ("probes", esc(data.probes_text(config))),
            ("probe overhead", "measured" if config.get("probe_overhead") else "not measured"),
            ("explain repeats", esc(data.explain_text(config))),
            ("baseline", esc(self.baseline) if self.baseline else "none"),
        ]
        patterns = config.get("mutex_patterns")
        if patterns:
            facts.append(("mutex patterns", ", ".join(f"<code>{esc(p)}</code>" for p in patterns)))
        if config.get("scenario") is not None:
            facts.append(("scenario", esc(config.get("scenario"))))
        if config.get("params"):
            params = "; ".join(
                f"{k} = {', '.join(param_text(v) for v in (vs if isinstance(vs, list) else [vs]))}"
                for k, vs in config["params"].items()
            )
            facts.append(("params", esc(params)))
        command = data.command_text(config)
        facts.append(("command", f"<code>{esc(command)}</code>" if command else "not recorded"))
        self.add('<dl class="facts">')
        for term, value in facts:
            self.add(f"<dt>{esc(term)}</dt><dd>{value}</dd>")
        self.add("</dl></header>")

    def charts(self) -> None:
        """Charts first (harness/charts/): per scenario, the ratios to the baseline with their
        intervals, then the latency percentiles; the CPU-per-op note under them."""
        drawn = [
            (chart, href)
            for chart in report_charts(self.doc)
            if (href := run_file(self.run_dir, chart.path)) is not None
        ]
        if not drawn:
            return
        self.add('<section id="charts"><h2>At a glance</h2>')
        for chart, href in drawn:
            vector = run_file(self.run_dir, chart.vector) or href
            self.add(
                f'<figure class="plot chart chart-{esc(chart.kind)}">',
                f"<figcaption><b>{esc(chart.title)}</b> · "
                f'<a href="{esc(vector)}">open</a></figcaption>',
                f'<img src="{esc(href)}" alt="{esc(chart.title)}">',
                "</figure>",
            )
        for note in cpu_notes(self.entries, self.metric, self.labels, varying_params(self.cells)):
            self.add(f'<p class="note cpu-note">{esc(note)}</p>')
        for note in stability_notes(self.cells, self.labels):
            self.add(f'<p class="note stability-note">{esc(note)}</p>')
        self.add("</section>")

    def contents(self) -> None:
        self.add(
            "<nav><h2>Contents</h2><ul>",
            '<li><a href="#summary">Summary tables</a></li>',
            '<li><a href="#findings">Findings</a></li>',
            '<li><a href="#plots">Plots</a></li>',
            '<li><a href="#failures">Failures</a></li>',
        )
        if self.doc.get("probe_overhead"):
            self.add('<li><a href="#overhead">Probe overhead</a></li>')
        if self.config.get("explain_repeats"):
            self.add('<li><a href="#explain">With probes</a></li>')
        for cell in self.cells:
            self.add(f'<li><a href="#{self.anchor(cell)}">{esc(self.name(cell))}</a></li>')
        self.add("</ul></nav>")

    def findings(self) -> None:
        self.add('<section id="findings"><h2>Findings</h2><ul>')
        for finding in data.findings(self.doc, self.run_dir):
            self.add(f"<li>{inline(finding)}</li>")
        self.add("</ul></section>")

    # -- summary tables -----------------------------------------------------------------------

    def summary(self) -> None:
        self.add('<section id="summary"><h2>Summary</h2>')
        if not self.cells:
            self.add('<p class="missing">no cells in this run</p></section>')
            return
        for scenario, group in data.scenarios(self.cells).items():
            self.scenario_table(scenario, group)
        shown = [e for e in self.entries if e.get("metric") == self.metric and e.get("reason")]
        lines = notes(shown) + probe_notes(self.cells, named_probes(self.doc))
        if self.unreported:
            lines.append(
                "declared by the suite but reported by no cell: " + ", ".join(self.unreported)
            )
        for line in lines:
            self.add(f'<p class="note">{esc(line)}</p>')
        self.add(f'<p class="dim">{esc(self.legend())}</p></section>')

    def legend(self) -> str:
        text = "Median of the repeats [95% interval of the median, from order statistics]."
        if self.metric is not None:
            text += (
                f" vs {self.baseline}: ratio of {self.label(self.metric)} medians to the "
                "baseline's at the same scenario and params [95% bootstrap interval];"
                " * Mann-Whitney U two-sided p < 0.05 (green better, red worse)."
            )
        text += " mutex share: lock-related frames in the client's on-CPU samples."
        short = sorted(
            {
                (int(s.get("n", 0)), float(s.get("ci_coverage", 1.0)))
                for cell in self.cells
                for s in cell_summary(cell).values()
                if float(s.get("ci_coverage", 1.0)) < CONFIDENCE
            }
        )
        for n, coverage in short:
            if n <= 1:
                text += " n=1: a single repeat, no interval."
            else:
                text += (
                    f" n={n}: the interval is [min{DASH}max] and covers the median with "
                    f"{coverage:.1%} only (n ≥ 6 reaches 95%)."
                )
        return text

    def scenario_table(self, scenario: str, group: Sequence[Mapping[str, Any]]) -> None:
        params = varying_params(group)
        against = (
            self.baseline
            if self.metric and any(c.get("strategy") == self.baseline for c in group)
            else None
        )
        self.add(f"<h3>scenario {esc(scenario)}</h3>", '<div class="scroll"><table>', "<tr>")
        # The metric compared with the baseline first, its ratio and p next to it.
        lead = [n for n in self.columns if n == self.metric] if against is not None else []
        rest = [n for n in self.columns if n not in lead]
        self.add('<th class="l">strategy</th>')
        self.add(*(f"<th>{esc(name)}</th>" for name in params))
        self.add(*(f"<th>{esc(self.label(name))}</th>" for name in lead))
        if against is not None:
            self.add(f"<th>vs {esc(against)}</th><th>p</th>")
        self.add(*(f"<th>{esc(self.label(name))}</th>" for name in rest))
        self.add("<th>runs</th></tr>")
        for cell in group:
            summary = cell_summary(cell)
            link = f'<a href="#{self.anchor(cell)}">{esc(cell.get("strategy"))}</a>'
            self.add("<tr>", f'<td class="l">{link}</td>')
            self.add(
                *(
                    f"<td>{esc(param_text((cell.get('params') or {}).get(name)))}</td>"
                    for name in params
                )
            )
            for name in lead:
                self.add(figure_cell(name, summary.get(name), self.units.get(name)))
            if against is not None and self.metric is not None:
                if cell.get("strategy") == against:
                    self.add('<td class="dim">baseline</td><td></td>')
                else:
                    entry = data.cell_comparison(self.index, cell, self.metric)
                    self.add(ratio_cell(entry), f"<td>{esc(p_text(entry))}</td>")
            for name in rest:
                self.add(figure_cell(name, summary.get(name), self.units.get(name)))
            self.add(runs_cell(cell), "</tr>")
        self.add("</table></div>")

    # -- failures and overhead ----------------------------------------------------------------

    def plots(self) -> None:
        """The run's plots, per scenario: the workload's describe asks for them
        (harness/charts/workload.py)."""
        self.add('<section id="plots"><h2>Plots</h2>')
        shown = 0
        for plot in self.doc.get("plots") or []:
            href = run_file(self.run_dir, plot.get("path"))
            if href is None:
                self.add(f"<p>missing plot: {esc(plot.get('path'))}</p>")
                continue
            caption = f"{plot.get('scenario')}: {plot.get('kind')}"
            self.add(
                '<figure class="plot">',
                f'<figcaption><b>{esc(caption)}</b> · <a href="{esc(href)}">open</a></figcaption>',
                f'<img src="{esc(href)}" loading="lazy" alt="{esc(caption)}">',
                "</figure>",
            )
            shown += 1
        if not shown:
            self.add(
                "<p>No plots: the workload's describe asks for none, or no repeat "
                "reported what they draw.</p>"
            )
        self.add("</section>")

    def failures(self) -> None:
        self.add('<section id="failures"><h2>Failures</h2>')
        failed = [(cell, cell.get("failures") or []) for cell in self.cells]
        if not any(f for _, f in failed):
            self.add("<p>No repeat failed.</p></section>")
            return
        self.add(
            "<table><tr><th class=l>cell</th><th>repeat</th><th>exit code</th>"
            '<th class="l">last line of stderr</th></tr>'
        )
        for cell, failures in failed:
            for failure in failures:
                error = str(failure.get("error") or "").strip()
                lines = error.splitlines()
                last = lines[-1] if lines else "no message"
                detail = (
                    f"<details><summary>{esc(last)}</summary><pre>{esc(error)}</pre></details>"
                    if len(lines) > 1
                    else esc(last)
                )
                self.add(
                    f'<tr><td class="l"><a href="#{self.anchor(cell)}">{esc(self.name(cell))}</a>'
                    f"</td><td>{esc(failure.get('repeat'))}</td>"
                    f"<td>{esc(failure.get('exit_code'))}</td>"
                    f'<td class="l failure">{detail}</td></tr>'
                )
        self.add("</table></section>")

    def overhead(self) -> None:
        overall = self.doc.get("probe_overhead")
        if not overall:
            cost = bpfstats.footer(self.cells)
            if cost is not None:
                self.add(f'<section id="overhead"><h2>Probe cost</h2><p>{esc(cost)}</p></section>')
            return
        pooled = self.doc.get("probe_overhead_paired") or {}
        what = f"<p>Median ops/s with the probes / without (1.00{TIMES} = free).</p>"
        if pooled:
            what = (
                f"<p>Ops/s with the probes / without (1.00{TIMES} = free), paired by round: "
                "the median of each round's ratio [its interval]; * Wilcoxon signed-rank "
                "p &lt; 0.05 (docs/probes.md).</p>"
            )
        self.add(
            '<section id="overhead"><h2>Probe overhead</h2>',
            what,
            '<div class="scroll"><table><tr><th class="l">cell</th>',
            *(f"<th>{esc(key)}</th>" for key in overall),
            "</tr>",
        )

        def ratio(value: Any, paired: Any = None) -> str:
            if isinstance(paired, Mapping) and paired.get("ratio") is not None:
                return esc(paired_text(paired).plain)
            return esc(human_ratio(float(value))) if value is not None else DASH

        for cell in self.cells:
            ratios = cell.get("probe_overhead") or {}
            pairs = cell.get("probe_overhead_paired") or {}
            self.add(
                f'<tr><td class="l">{esc(self.name(cell))}</td>',
                *(f"<td>{ratio(ratios.get(key), pairs.get(key))}</td>" for key in overall),
                "</tr>",
            )
        label = "all cells (rounds pooled)" if pooled else "all cells (geometric mean)"
        self.add(
            f'<tr><td class="l"><b>{label}</b></td>',
            *(f"<td><b>{ratio(v, pooled.get(k))}</b></td>" for k, v in overall.items()),
            "</tr>",
        )
        shares = overhead_cpu_shares(self.cells, list(overall))
        if shares:
            self.add(
                '<tr><td class="l">BPF CPU share</td>',
                *(f"<td>{esc(shares.get(k) or '')}</td>" for k in overall),
                "</tr>",
            )
        self.add("</table></div>")
        cost = bpfstats.footer(self.cells)
        if cost is not None:
            self.add(f"<p>{esc(cost)}</p>")
        self.add("</section>")

    def explain(self) -> None:
        """The explain repeats apart: per cell their ops/s against the measurement repeats',
        the ratio paired by round, and both kinds' BPF CPU share (docs/probes.md)."""
        config = self.config
        if not config.get("explain_repeats"):
            return
        measured = ", ".join(config.get("measurement_probes") or []) or "no probe"
        self.add(
            '<section id="explain"><h2>With probes</h2>',
            f"<p>The figures above come from the measurement repeats, which carry only the "
            f"probes whose cost is negligible ({esc(measured)}). Each cell also ran "
            f"{esc(config['explain_repeats'])} explain repeat(s) with every probe "
            f"(<code>{esc(config.get('explain_set'))}</code>), interleaved with the others: "
            "the stack graphs and profiles come from these. Their figures are here only. "
            f"explain / measurement: ops/s of each explain repeat / the measurement repeat of "
            f"its round (1.00{TIMES} = no perturbation), the median [its interval]; * Wilcoxon "
            "signed-rank p &lt; 0.05. BPF CPU share: the median repeat's BPF programs' share "
            "of the machine's CPU over its window.</p>",
            '<div class="scroll"><table><tr><th class="l">cell</th>',
            "<th>ops/s measurement</th><th>ops/s with probes</th><th>explain / measurement</th>"
            "<th>p</th><th>BPF CPU measurement</th><th>BPF CPU explain</th></tr>",
        )

        def share(results: Sequence[Mapping[str, Any]]) -> str:
            value = share_median(results)
            return esc(percent(value)) if value is not None else DASH

        def paired(entry: Mapping[str, Any] | None) -> tuple[str, str]:
            if not entry or entry.get("ratio") is None:
                return DASH, esc((entry or {}).get("reason") or "")
            p = entry.get("p_value")
            return esc(paired_text(entry).plain), esc(human_p(float(p))) if p is not None else ""

        unit = self.units.get("ops_per_sec")
        for cell in self.cells:
            ratio, p = paired(cell.get("explain_ratio"))
            explain = cell.get("explain_summary") or {}
            self.add(
                f'<tr><td class="l"><a href="#{self.anchor(cell)}">{esc(self.name(cell))}</a></td>',
                figure_cell("ops_per_sec", cell_summary(cell).get("ops_per_sec"), unit),
                figure_cell("ops_per_sec", explain.get("ops_per_sec"), unit),
                f"<td>{ratio}</td><td>{p}</td>",
                f"<td>{share(cell.get('repeats') or [])}</td>",
                f"<td>{share(explain_results(self.doc, cell))}</td></tr>",
            )
        ratio, p = paired(self.doc.get("explain_ratio"))
        self.add(
            '<tr><td class="l"><b>all cells (rounds pooled)</b></td><td></td><td></td>',
            f"<td><b>{ratio}</b></td><td>{p}</td><td></td><td></td></tr>",
            "</table></div></section>",
        )

    # -- one cell -----------------------------------------------------------------------------

    def cell_section(self, cell: Mapping[str, Any]) -> None:
        ok, failed = len(cell.get("repeats") or []), len(cell.get("failures") or [])
        params = ", ".join(f"{k}={param_text(v)}" for k, v in (cell.get("params") or {}).items())
        self.add(
            f'<section class="cell" id="{self.anchor(cell)}">',
            f"<h2>{esc(self.name(cell))}</h2>",
            f'<p class="dim">cell <code>{esc(cell.get("id"))}</code> · scenario '
            f"{esc(cell.get('scenario'))} · {esc(params or 'no params')} · "
            f"{ok} of {ok + failed} repeats succeeded</p>",
        )
        if failed:
            self.add(
                f'<p class="failure">{failed} repeat{"" if failed == 1 else "s"} failed: see '
                '<a href="#failures">Failures</a>.</p>'
            )
        self.flame_graphs(cell)
        self.profile(cell)
        self.probes(cell)
        self.cell_comparisons(cell)
        self.add("</section>")

    def flame_graphs(self, cell: Mapping[str, Any]) -> None:
        self.add("<h3>Flame graphs</h3>")
        flames = data.flames(self.run_dir, cell, self.baseline)
        drawn = [f for f in flames if f.href]
        if drawn:
            self.add('<div class="flames">')
            for flame in drawn:
                self.flame_figure(cell, flame)
            self.add("</div>")
        for gap in data.flame_gaps(flames, skip_baseline_diff=True):
            self.add(f'<p class="missing">{esc(gap)}</p>')
        if any(f.reason == data.BASELINE_CELL for f in flames):
            self.add('<p class="dim">no differential flame graph: this is the baseline cell</p>')
        for flame in flames:
            if flame.folded_href and not flame.href:
                self.add(
                    f'<p>{esc(flame.kind.title)} folded stacks: <a href="{esc(flame.folded_href)}">'
                    f"{esc(flame.folded_path)}</a></p>"
                )
            for problem in flame.problems:
                self.add(f'<p class="missing">{esc(problem)}</p>')

    def flame_figure(self, cell: Mapping[str, Any], flame: Flame) -> None:
        assert flame.href is not None and flame.path is not None
        title = f"{flame.kind.title} flame graph"
        profile = cell.get("profile") or {}
        if flame.kind.key == "diff":
            title += f" vs {profile.get('diff_baseline') or self.baseline}"
        links = [f'<a href="{esc(flame.href)}">open {esc(flame.path)}</a>']
        if flame.folded_href:
            links.append(f'<a href="{esc(flame.folded_href)}">folded stacks</a>')
        size = data.svg_size(self.run_dir, flame.path)
        dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
        self.add(
            '<figure class="flame">',
            f"<figcaption><b>{esc(title)}</b> · {' · '.join(links)}</figcaption>",
            f'<a href="{esc(flame.href)}"><img src="{esc(flame.href)}"{dims} loading="lazy" '
            f'alt="{esc(title)} of {esc(self.name(cell))}"></a>',
            "</figure>",
        )

    def profile(self, cell: Mapping[str, Any]) -> None:
        profile: Mapping[str, Any] = cell.get("profile") or {}
        self.add("<h3>Profile</h3>")
        if not profile:
            self.add(
                '<p class="missing">no profile: run.json has no profile for this cell '
                "(the profiler did not run)</p>"
            )
            return
        facts = []
        if profile.get("samples") is not None:
            facts.append(f"{int(profile['samples']):,} on-CPU samples")
        if profile.get("client_samples") is not None:
            facts.append(f"{int(profile['client_samples']):,} of them in the client")
        share = data.mutex_share(cell)
        if share is not None:
            facts.append(f"mutex share {percent(share)} of the client's samples")
        if profile.get("offcpu_ns") is not None:
            facts.append(f"{human(float(profile['offcpu_ns']), time_ns=True)} off-CPU")
        if profile.get("wakeups") is not None:
            facts.append(f"{int(profile['wakeups']):,} wake-ups")
        if facts:
            self.add(f"<p>{esc(' · '.join(facts))}</p>")
        # Notes already said under the flame graphs are not repeated.
        said = set(data.flame_gaps(data.flames(self.run_dir, cell, self.baseline)))
        for note in data.profile_notes(profile):
            if note not in said:
                self.add(f'<p class="note">{esc(note)}</p>')

        top = profile.get("top_self") or []
        self.add(f"<h4>Top {data.TOP_FRAMES} frames by self time (client)</h4>")
        if top:
            self.add(
                '<table><tr><th class="l">frame</th><th>samples</th><th>share</th></tr>',
                *(
                    f'<tr><td class="frame">{esc(t.get("frame"))}</td>'
                    f"<td>{esc(self.count(t.get('samples')))}</td>"
                    f"<td>{esc(self.share(t.get('share')))}</td></tr>"
                    for t in top[: data.TOP_FRAMES]
                ),
                "</table>",
            )
        else:
            self.add('<p class="missing">no self-time frames in run.json for this cell</p>')

        against = profile.get("diff_baseline") or self.baseline
        self.add(f"<h4>Frames that grew most vs {esc(against)}</h4>")
        grew = profile.get("grew") or []
        if grew:
            self.add(
                '<table><tr><th class="l">frame</th><th>share in baseline</th>'
                "<th>share here</th><th>growth</th></tr>",
                *(
                    f'<tr><td class="frame">{esc(g.get("frame"))}</td>'
                    f"<td>{esc(self.share(g.get('baseline_share')))}</td>"
                    f"<td>{esc(self.share(g.get('share')))}</td>"
                    f"<td>{esc(self.points(g.get('delta')))}</td></tr>"
                    for g in grew[: data.TOP_FRAMES]
                ),
                "</table>",
            )
        elif cell.get("strategy") == self.baseline:
            self.add('<p class="dim">this is the baseline cell</p>')
        else:
            why = [n for n in data.profile_notes(profile) if data.note_kind(n) == "diff"]
            self.add(
                '<p class="missing">no comparison of frames with the baseline in run.json'
                + (f": {esc('; '.join(why))}" if why else "")
                + "</p>"
            )

    @staticmethod
    def count(value: Any) -> str:
        return f"{int(value):,}" if isinstance(value, int | float) else DASH

    @staticmethod
    def share(value: Any) -> str:
        return percent(float(value)) if isinstance(value, int | float) else DASH

    @staticmethod
    def points(value: Any) -> str:
        """A difference of two shares, in percentage points."""
        if not isinstance(value, int | float):
            return DASH
        return f"{value * 100:+.2g} pp" if abs(value) < 0.01 else f"{value * 100:+.1f} pp"

    def probes(self, cell: Mapping[str, Any]) -> None:
        self.add("<h3>Probes</h3>")
        probes: Mapping[str, Any] = cell.get("probes") or {}
        if not probes:
            ran = data.probes_text(self.config)
            why = "the run had no probes" if ran == "none" else "no probe result in run.json"
            self.add(f'<p class="missing">no probe results: {esc(why)}</p>')
            return
        named = named_probes(self.doc)
        for name, probe in probes.items():
            self.add(f"<h4>{esc(name)}</h4>")
            for problem in data.probe_problems(probe, name in named):
                self.add(f'<p class="missing">{esc(problem)}</p>')
            if "not_applicable" in probe and name not in named:  # no gap: not a note, only here
                self.add(f'<p class="dim">does not apply: {esc(probe["not_applicable"])}</p>')
            if "lost_events" in probe:
                lost = int(probe.get("lost_events") or 0)
                cls = "missing" if lost else "dim"
                self.add(f'<p class="{cls}">lost events over the repeats: {lost:,}</p>')
            self.add(*registry.kind_of(name).report(self.run_dir, probe))
            raw = [
                (path, href)
                for path in probe.get("paths") or []
                if (href := run_file(self.run_dir, path))
            ]
            if raw:
                self.add(
                    "<p class=dim>raw output: "
                    + ", ".join(f'<a href="{esc(href)}">{esc(path)}</a>' for path, href in raw)
                    + "</p>"
                )
            gone = [p for p in probe.get("paths") or [] if not run_file(self.run_dir, p)]
            for path in gone:
                self.add(
                    f'<p class="missing">raw output {esc(path)} is not in the run directory</p>'
                )

    def cell_comparisons(self, cell: Mapping[str, Any]) -> None:
        if not self.baseline:
            return
        self.add(f"<h3>Compared with {esc(self.baseline)}</h3>")
        if cell.get("strategy") == self.baseline:
            self.add('<p class="dim">this is the baseline cell</p>')
            return
        entries = [
            e
            for e in self.entries
            if data.comparison_key(e.get("scenario"), e.get("candidate"), e.get("params"), "")
            == data.comparison_key(
                cell.get("scenario"), cell.get("strategy"), cell.get("params"), ""
            )
        ]
        if not entries:
            self.add('<p class="missing">no comparisons in run.json for this cell</p>')
            return
        self.add(
            '<div class="scroll"><table><tr><th class="l">metric</th><th>baseline</th>'
            '<th>this cell</th><th>ratio</th><th>p</th><th class="l">verdict</th>'
            '<th class="l">note</th></tr>'
        )
        for e in entries:
            metric = str(e.get("metric"))
            unit = self.units.get(metric)

            def median(value: Any, metric: str = metric, unit: str | None = unit) -> str:
                if value is None:
                    return DASH
                return value_text(metric, float(value), unit)

            verdict = str(e.get("verdict") or "")
            self.add(
                f'<tr><td class="l">{esc(self.label(metric))}</td>'
                f"<td>{esc(median(e.get('baseline_median')))}</td>"
                f"<td>{esc(median(e.get('candidate_median')))}</td>",
                ratio_cell(e),
                f"<td>{esc(p_text(e))}</td>",
                f'<td class="l {esc(verdict)}">{esc(verdict)}</td>',
                f'<td class="l dim">{esc(e.get("reason") or "")}</td></tr>',
            )
        self.add("</table></div>")


def render(doc: Mapping[str, Any], run_dir: Path) -> str:
    return Page(doc, run_dir).render()


def write_report(run_dir: Path) -> Path:
    """Write `<run_dir>/report.html` from `<run_dir>/run.json`; return its path."""
    run_dir = Path(run_dir)
    doc = as_json(load_run(run_dir))
    path = run_dir / "report.html"
    write_atomic(path, render(doc, run_dir))
    return path
