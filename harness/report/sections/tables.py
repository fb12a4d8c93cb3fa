"""The summary tables per scenario, the findings, the failed repeats, and a cell's
comparisons with the baseline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.format.cells import by_scenario, param_text, varying_params
from harness.format.figures import p_text, value_text
from harness.format.notes import notes, probe_notes
from harness.format.numbers import DASH
from harness.format.twins import TWIN_MARK, missing_twins, twin_clause, vs_column
from harness.report import data
from harness.report.sections.context import Context
from harness.report.sections.markup import esc, figure_cell, inline, ratio_cell, runs_cell
from harness.rundoc.model import Cell
from harness.stats import CONFIDENCE


def summary(page: Context) -> None:
    page.add('<section id="summary"><h2>Summary</h2>')
    if not page.cells:
        page.add('<p class="missing">no cells in this run</p></section>')
        return
    for scenario, group in by_scenario(page.cells).items():
        scenario_table(page, scenario, group)
    shown = [e for e in page.entries if e["metric"] == page.metric and e["reason"]]
    lines = [f"note: {line}" for line in missing_twins(page.run)]
    lines += notes(shown) + probe_notes(page.cell_docs, page.run.named_probes())
    if page.unreported:
        lines.append("declared by the suite but reported by no cell: " + ", ".join(page.unreported))
    for line in lines:
        page.add(f'<p class="note">{esc(line)}</p>')
    page.add(f'<p class="dim">{esc(legend(page))}</p></section>')


def legend(page: Context) -> str:
    text = "Median of the repeats [95% interval of the median, from order statistics]."
    if page.metric is not None:
        text += (
            f" vs {page.baseline}: ratio of {page.label(page.metric)} medians to the "
            f"baseline's at the same scenario and params{twin_clause(page.run)} [95% "
            "bootstrap interval];"
            " * Mann-Whitney U two-sided p < 0.05 (green better, red worse)."
        )
    text += " mutex share: lock-related frames in the client's on-CPU samples."
    short = sorted(
        {
            (int(s.get("n", 0)), float(s.get("ci_coverage", 1.0)))
            for cell in page.cells
            for s in page.summary(cell).values()
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


def scenario_table(page: Context, scenario: str, group: Sequence[Cell]) -> None:
    params = varying_params([page.cell_doc(c) for c in group])
    vs = vs_column(page.run, group) if page.metric else None
    page.add(f"<h3>scenario {esc(scenario)}</h3>", '<div class="scroll"><table>', "<tr>")
    # The metric compared with the baseline first, its ratio and p next to it.
    lead = [n for n in page.columns if n == page.metric] if vs is not None else []
    rest = [n for n in page.columns if n not in lead]
    page.add('<th class="l">strategy</th>')
    page.add(*(f"<th>{esc(name)}</th>" for name in params))
    page.add(*(f"<th>{esc(page.label(name))}</th>" for name in lead))
    if vs is not None:
        page.add(f"<th>{esc(vs.heading)}</th><th>p</th>")
    page.add(*(f"<th>{esc(page.label(name))}</th>" for name in rest))
    page.add("<th>runs</th></tr>")
    for cell in group:
        summary = page.summary(cell)
        link = f'<a href="#{page.anchor(cell)}">{esc(cell.strategy)}</a>'
        page.add("<tr>", f'<td class="l">{link}</td>')
        page.add(*(f"<td>{esc(param_text(cell.params.get(name)))}</td>" for name in params))
        for name in lead:
            page.add(figure_cell(name, summary.get(name), page.units.get(name)))
        if vs is not None and page.metric is not None:
            if vs.uncompared(cell.strategy):
                page.add('<td class="dim">baseline</td><td></td>')
            else:
                entry = data.cell_comparison(page.index, cell, page.metric)
                mark = TWIN_MARK if vs.twin(cell.strategy) is not None else ""
                page.add(ratio_cell(entry, mark), f"<td>{esc(p_text(entry))}</td>")
        for name in rest:
            page.add(figure_cell(name, summary.get(name), page.units.get(name)))
        page.add(runs_cell(cell), "</tr>")
    page.add("</table></div>")
    footnote = vs.footnote() if vs is not None else None
    if footnote is not None:
        page.add(f'<p class="dim">{esc(footnote)}</p>')


def findings(page: Context) -> None:
    page.add('<section id="findings"><h2>Findings</h2><ul>')
    for finding in data.findings(page):
        page.add(f"<li>{inline(finding)}</li>")
    page.add("</ul></section>")


def failures(page: Context) -> None:
    page.add('<section id="failures"><h2>Failures</h2>')
    failed = [(cell, cell.failures) for cell in page.cells]
    if not any(f for _, f in failed):
        page.add("<p>No repeat failed.</p></section>")
        return
    page.add(
        "<table><tr><th class=l>cell</th><th>repeat</th><th>exit code</th>"
        '<th class="l">last line of stderr</th></tr>'
    )
    for cell, failures in failed:
        for failure in failures:
            error = failure.error.strip()
            lines = error.splitlines()
            last = lines[-1] if lines else "no message"
            detail = (
                f"<details><summary>{esc(last)}</summary><pre>{esc(error)}</pre></details>"
                if len(lines) > 1
                else esc(last)
            )
            page.add(
                f'<tr><td class="l"><a href="#{page.anchor(cell)}">{esc(page.name(cell))}</a>'
                f"</td><td>{esc(failure.repeat)}</td>"
                f"<td>{esc(failure.exit_code)}</td>"
                f'<td class="l failure">{detail}</td></tr>'
            )
    page.add("</table></section>")


def cell_comparisons(page: Context, cell: Cell) -> None:
    if not page.baseline:
        return
    against = page.run.baseline_of(cell)
    if against is None:
        page.add(f"<h3>Compared with {esc(page.baseline)}</h3>")
        page.add('<p class="dim">this is the baseline cell</p>')
        return
    twin = " (its twin)" if against != page.baseline else ""
    page.add(f"<h3>Compared with {esc(against)}{twin}</h3>")
    key = data.comparison_key(cell.scenario, cell.strategy, cell.params, "")
    entries = [
        e
        for e in page.entries
        if data.comparison_key(e["scenario"], e["candidate"], e["params"], "") == key
    ]
    if not entries:
        page.add('<p class="missing">no comparisons in run.json for this cell</p>')
        return
    page.add(
        '<div class="scroll"><table><tr><th class="l">metric</th><th>baseline</th>'
        '<th>this cell</th><th>ratio</th><th>p</th><th class="l">verdict</th>'
        '<th class="l">note</th></tr>'
    )
    for e in entries:
        metric = str(e["metric"])
        unit = page.units.get(metric)

        def median(value: Any, metric: str = metric, unit: str | None = unit) -> str:
            if value is None:
                return DASH
            return value_text(metric, float(value), unit)

        verdict = str(e["verdict"])
        page.add(
            f'<tr><td class="l">{esc(page.label(metric))}</td>'
            f"<td>{esc(median(e['baseline_median']))}</td>"
            f"<td>{esc(median(e['candidate_median']))}</td>",
            ratio_cell(e),
            f"<td>{esc(p_text(e))}</td>",
            f'<td class="l {esc(verdict)}">{esc(verdict)}</td>',
            f'<td class="l dim">{esc(e["reason"] or "")}</td></tr>',
        )
    page.add("</table></div>")
