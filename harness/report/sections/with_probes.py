"""The explain repeats apart: the section "With probes"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.format.numbers import DASH, TIMES, human_p, percent
from harness.probes.overhead_pairs import paired_text, share_median
from harness.report.sections.context import Context
from harness.report.sections.markup import esc, figure_cell
from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import OverheadInterval


def explain(page: Context) -> None:
    """The explain repeats apart: per cell their ops/s against the measurement repeats',
    the ratio paired by round, and both kinds' BPF CPU share (docs/probes.md)."""
    config = page.config
    if not config.explain_repeats:
        return
    measured = ", ".join(config.measurement_probes or []) or "no probe"
    page.add(
        '<section id="explain"><h2>With probes</h2>',
        f"<p>The figures above come from the measurement repeats, which carry only the "
        f"probes whose cost is negligible ({esc(measured)}). Each cell also ran "
        f"{esc(config.explain_repeats)} explain repeat(s) with every probe "
        f"(<code>{esc(config.explain_set)}</code>), interleaved with the others: "
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

    def paired(entry: OverheadInterval | None) -> tuple[str, str]:
        if entry is None or entry.ratio is None:
            return DASH, esc(entry.reason or "" if entry else "")
        p = entry.p_value
        figures = paired_text(as_json(entry)).plain
        return esc(figures), esc(human_p(p)) if p is not None else ""

    unit = page.units.get("ops_per_sec")
    for cell in page.cells:
        ratio, p = paired(cell.explain_ratio)
        explain = (cell.explain_summary or {}).get("ops_per_sec")
        page.add(
            f'<tr><td class="l"><a href="#{page.anchor(cell)}">{esc(page.name(cell))}</a></td>',
            figure_cell("ops_per_sec", page.summary(cell).get("ops_per_sec"), unit),
            figure_cell("ops_per_sec", as_json(explain) if explain else None, unit),
            f"<td>{ratio}</td><td>{p}</td>",
            f"<td>{share(cell.repeats)}</td>",
            f"<td>{share(cell.variant(config.explain_set))}</td></tr>",
        )
    ratio, p = paired(page.run.explain_ratio)
    page.add(
        '<tr><td class="l"><b>all cells (rounds pooled)</b></td><td></td><td></td>',
        f"<td><b>{ratio}</b></td><td>{p}</td><td></td><td></td></tr>",
        "</table></div></section>",
    )
