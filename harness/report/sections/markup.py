"""HTML pieces the sections share: escaping, a finding inline, the table cells of a figure,
a ratio and a cell's runs."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from harness.format.figures import ratio_texts, summary_texts
from harness.format.numbers import DASH
from harness.report.data import Code, Finding
from harness.rundoc.model import Cell


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


def ratio_cell(entry: Mapping[str, Any] | None, twin_mark: str = "") -> str:
    """The ratio with its significance mark and interval; `twin_mark` after it when the
    cell is compared with its twin (named under the table)."""
    ratio, interval = ratio_texts(entry)
    if entry is None or entry.get("ratio") is None:
        reason = entry.get("reason") if entry else "no comparison in run.json"
        return f'<td title="{esc(reason)}"><span class="dim">{DASH}</span></td>'
    verdict = str(entry.get("verdict") or "")
    mark = ""
    if entry.get("significant"):
        mark = f' <span class="{esc(verdict)}" title="p &lt; 0.05: {esc(verdict)}">*</span>'
    if twin_mark:
        title = f"against its twin, {entry.get('baseline')}"
        mark += f' <span class="twin" title="{esc(title)}">{esc(twin_mark)}</span>'
    ci = f'<span class="ci">[{esc(interval)}]</span>' if interval else ""
    return f'<td><span class="med">{esc(ratio)}{mark}</span>{ci}</td>'


def runs_cell(cell: Cell) -> str:
    ok, failed = cell.runs
    cls = ' class="failure"' if failed else ""
    return f"<td{cls}>{ok}/{ok + failed}</td>"
