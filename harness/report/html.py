"""`report.html`: one self-contained page per run (inline CSS, no script, no CDN, no web
fonts), readable offline straight from the run directory.

Every figure comes from run.json; links are relative to the run directory and are written only
for files that exist there. Anything missing (a probe that did not run, a flame graph that was
not made) is stated with its reason, never left out silently.
"""

from __future__ import annotations

from pathlib import Path

from harness.format.cells import param_text
from harness.report.data import write_page
from harness.report.sections import charts, flame, header, probes, tables, with_probes
from harness.report.sections.context import Context
from harness.report.sections.markup import esc
from harness.rundoc.model import Cell, RunDoc

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


def render(run: RunDoc, run_dir: Path) -> str:
    """report.html of one run: its sections (harness/report/sections/) in order."""
    page = Context(run, run_dir)
    title = f"{run.suite} · run {run.run_id}"
    page.add(
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style></head><body>",
    )
    header.header(page, title)
    charts.charts(page)
    header.contents(page)
    tables.summary(page)
    tables.findings(page)
    charts.plots(page)
    tables.failures(page)
    probes.overhead(page)
    with_probes.explain(page)
    for cell in page.cells:
        cell_section(page, cell)
    page.add(
        "<footer>Written by <code>harness</code> from run.json; every link is relative to "
        "the run directory. Flame graphs open interactive (click to zoom, Ctrl-F to search)."
        "</footer>",
        "</body></html>",
    )
    return "\n".join(page.out) + "\n"


def cell_section(page: Context, cell: Cell) -> None:
    ok, failed = cell.runs
    params = ", ".join(f"{k}={param_text(v)}" for k, v in cell.params.items())
    page.add(
        f'<section class="cell" id="{page.anchor(cell)}">',
        f"<h2>{esc(page.name(cell))}</h2>",
        f'<p class="dim">cell <code>{esc(cell.id)}</code> · scenario '
        f"{esc(cell.scenario)} · {esc(params or 'no params')} · "
        f"{ok} of {ok + failed} repeats succeeded</p>",
    )
    if failed:
        page.add(
            f'<p class="failure">{failed} repeat{"" if failed == 1 else "s"} failed: see '
            '<a href="#failures">Failures</a>.</p>'
        )
    flame.flame_graphs(page, cell)
    flame.profile(page, cell)
    probes.cell_probes(page, cell)
    tables.cell_comparisons(page, cell)
    page.add("</section>")


def write_report(run_dir: Path, run: RunDoc | None = None) -> Path:
    """Write `<run_dir>/report.html`; return its path."""
    return write_page(Path(run_dir), "report.html", render, run)
