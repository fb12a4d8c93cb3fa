"""What the probes cost (the probe overhead) and what each probe of a cell reported."""

from __future__ import annotations

from harness.format.numbers import DASH, TIMES, human_ratio
from harness.probes import bpfstats, registry
from harness.probes.overhead_pairs import (
    overhead_cpu_shares,
    paired_text,
)
from harness.report import data
from harness.report.sections.context import Context
from harness.report.sections.markup import esc
from harness.rundoc.files import run_file
from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import Cell, OverheadInterval


def overhead(page: Context) -> None:
    overall = page.run.probe_overhead
    if not overall:
        cost = bpfstats.footer(page.cell_docs)
        if cost is not None:
            page.add(f'<section id="overhead"><h2>Probe cost</h2><p>{esc(cost)}</p></section>')
        return
    pooled = page.run.probe_overhead_paired or {}
    what = f"<p>Median ops/s with the probes / without (1.00{TIMES} = free).</p>"
    if pooled:
        what = (
            f"<p>Ops/s with the probes / without (1.00{TIMES} = free), paired by round: "
            "the median of each round's ratio [its interval]; * Wilcoxon signed-rank "
            "p &lt; 0.05 (docs/probes.md).</p>"
        )
    page.add(
        '<section id="overhead"><h2>Probe overhead</h2>',
        what,
        '<div class="scroll"><table><tr><th class="l">cell</th>',
        *(f"<th>{esc(key)}</th>" for key in overall),
        "</tr>",
    )

    def ratio(value: float | None, paired: OverheadInterval | None = None) -> str:
        if paired is not None and paired.ratio is not None:
            return esc(paired_text(as_json(paired)).plain)
        return esc(human_ratio(float(value))) if value is not None else DASH

    for cell in page.cells:
        ratios = cell.probe_overhead or {}
        pairs = cell.probe_overhead_paired or {}
        page.add(
            f'<tr><td class="l">{esc(page.name(cell))}</td>',
            *(f"<td>{ratio(ratios.get(key), pairs.get(key))}</td>" for key in overall),
            "</tr>",
        )
    label = "all cells (rounds pooled)" if pooled else "all cells (geometric mean)"
    page.add(
        f'<tr><td class="l"><b>{label}</b></td>',
        *(f"<td><b>{ratio(v, pooled.get(k))}</b></td>" for k, v in overall.items()),
        "</tr>",
    )
    shares = overhead_cpu_shares(page.cell_docs, list(overall))
    if shares:
        page.add(
            '<tr><td class="l">BPF CPU share</td>',
            *(f"<td>{esc(shares.get(k) or '')}</td>" for k in overall),
            "</tr>",
        )
    page.add("</table></div>")
    cost = bpfstats.footer(page.cell_docs)
    if cost is not None:
        page.add(f"<p>{esc(cost)}</p>")
    page.add("</section>")


def cell_probes(page: Context, cell: Cell) -> None:
    page.add("<h3>Probes</h3>")
    probes = cell.probes
    if not probes:
        ran = data.probes_text(page.config)
        why = "the run had no probes" if ran == "none" else "no probe result in run.json"
        page.add(f'<p class="missing">no probe results: {esc(why)}</p>')
        return
    named = page.run.named_probes()
    for name, probe in probes.items():
        page.add(f"<h4>{esc(name)}</h4>")
        recorded = as_json(probe)
        for problem in data.probe_problems(recorded, name in named):
            page.add(f'<p class="missing">{esc(problem)}</p>')
        if probe.not_applicable is not None and name not in named:  # a note only here
            page.add(f'<p class="dim">does not apply: {esc(probe.not_applicable)}</p>')
        if probe.lost_events is not None:
            lost = probe.lost_events
            cls = "missing" if lost else "dim"
            page.add(f'<p class="{cls}">lost events over the repeats: {lost:,}</p>')
        page.add(*registry.kind_of(name).report(page.run_dir, recorded))
        paths = probe.paths or []
        raw = [(path, href) for path in paths if (href := run_file(page.run_dir, path))]
        if raw:
            page.add(
                "<p class=dim>raw output: "
                + ", ".join(f'<a href="{esc(href)}">{esc(path)}</a>' for path, href in raw)
                + "</p>"
            )
        gone = [p for p in paths if not run_file(page.run_dir, p)]
        for path in gone:
            page.add(f'<p class="missing">raw output {esc(path)} is not in the run directory</p>')
