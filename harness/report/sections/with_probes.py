"""The explain repeats apart: the section "With probes"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.format.cells import cell_summary
from harness.format.numbers import DASH, TIMES, human_p, percent
from harness.probes.overhead_pairs import (
    explain_results,
    paired_text,
    share_median,
)
from harness.report.sections.context import Context
from harness.report.sections.markup import esc, figure_cell


def explain(page: Context) -> None:
    """The explain repeats apart: per cell their ops/s against the measurement repeats',
    the ratio paired by round, and both kinds' BPF CPU share (docs/probes.md)."""
    config = page.config
    if not config.get("explain_repeats"):
        return
    measured = ", ".join(config.get("measurement_probes") or []) or "no probe"
    page.add(
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

    unit = page.units.get("ops_per_sec")
    for cell in page.cells:
        ratio, p = paired(cell.get("explain_ratio"))
        explain = cell.get("explain_summary") or {}
        page.add(
            f'<tr><td class="l"><a href="#{page.anchor(cell)}">{esc(page.name(cell))}</a></td>',
            figure_cell("ops_per_sec", cell_summary(cell).get("ops_per_sec"), unit),
            figure_cell("ops_per_sec", explain.get("ops_per_sec"), unit),
            f"<td>{ratio}</td><td>{p}</td>",
            f"<td>{share(cell.get('repeats') or [])}</td>",
            f"<td>{share(explain_results(page.doc, cell))}</td></tr>",
        )
    ratio, p = paired(page.doc.get("explain_ratio"))
    page.add(
        '<tr><td class="l"><b>all cells (rounds pooled)</b></td><td></td><td></td>',
        f"<td><b>{ratio}</b></td><td>{p}</td><td></td><td></td></tr>",
        "</table></div></section>",
    )
