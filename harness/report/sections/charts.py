"""The charts the page opens with (harness/charts/), and the workload's plots."""

from __future__ import annotations

from harness.charts.report import report_charts
from harness.format.cells import varying_params
from harness.format.cpu_notes import cpu_notes
from harness.report.sections.context import Context
from harness.report.sections.markup import esc
from harness.rundoc.files import run_file
from harness.stability import stability_notes


def charts(page: Context) -> None:
    """Charts first (harness/charts/): per scenario, the ratios to the baseline with their
    intervals, then the latency percentiles; the CPU-per-op note under them."""
    drawn = [
        (chart, href)
        for chart in report_charts(page.doc)
        if (href := run_file(page.run_dir, chart.path)) is not None
    ]
    if not drawn:
        return
    page.add('<section id="charts"><h2>At a glance</h2>')
    for chart, href in drawn:
        vector = run_file(page.run_dir, chart.vector) or href
        page.add(
            f'<figure class="plot chart chart-{esc(chart.kind)}">',
            f"<figcaption><b>{esc(chart.title)}</b> · "
            f'<a href="{esc(vector)}">open</a></figcaption>',
            f'<img src="{esc(href)}" alt="{esc(chart.title)}">',
            "</figure>",
        )
    varying = varying_params(page.cell_docs)
    for note in cpu_notes(page.entries, page.metric, page.labels, varying):
        page.add(f'<p class="note cpu-note">{esc(note)}</p>')
    for note in stability_notes(page.cell_docs, page.labels):
        page.add(f'<p class="note stability-note">{esc(note)}</p>')
    page.add("</section>")


def plots(page: Context) -> None:
    """The run's plots, per scenario: the workload's describe asks for them
    (harness/charts/workload.py)."""
    page.add('<section id="plots"><h2>Plots</h2>')
    shown = 0
    for plot in page.run.plots:
        href = run_file(page.run_dir, plot.path)
        if href is None:
            page.add(f"<p>missing plot: {esc(plot.path)}</p>")
            continue
        caption = f"{plot.scenario}: {plot.kind}"
        page.add(
            '<figure class="plot">',
            f'<figcaption><b>{esc(caption)}</b> · <a href="{esc(href)}">open</a></figcaption>',
            f'<img src="{esc(href)}" loading="lazy" alt="{esc(caption)}">',
            "</figure>",
        )
        shown += 1
    if not shown:
        page.add(
            "<p>No plots: the workload's describe asks for none, or no repeat "
            "reported what they draw.</p>"
        )
    page.add("</section>")
