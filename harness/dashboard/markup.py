"""The HTML of the dashboard's pages: escaping, the page around a body, the names of things
shown on them. Every name from the history is HTML-escaped here and set as text by the
scripts."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from harness.dashboard.data import Series
from harness.format.figures import interval_text, value_text
from harness.format.metrics import SHARE_UNIT
from harness.format.numbers import is_time_metric
from harness.probes import registry

# Runs a sparkline shows.
SPARK_RUNS = 60


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def params_text(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def shown_unit(s: Series) -> str | None:
    """The series' unit; a probe's share (mutex_share) is one whatever its run declared."""
    return registry.share_units().get(s.metric, s.unit)


def figure(s: Series, value: float) -> str:
    """A series' value as the tables print it: 159.1k, 419.8µs, 27.3%."""
    return value_text(s.metric, value, shown_unit(s))


def unit_after(s: Series) -> str:
    """The unit to write after a figure: none where the figure carries it (times, shares)."""
    if not s.unit or shown_unit(s) == SHARE_UNIT or is_time_metric(s.metric, s.unit):
        return ""
    return f" {e(s.unit)}"


def interval_html(s: Series, low: float | None, high: float | None) -> str:
    """A series' interval as the tables print it, escaped; '' without one."""
    if low is None or high is None:
        return ""
    return e(interval_text(s.metric, low, high, shown_unit(s)))


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")


def page(
    title: str,
    body: str,
    depth: int = 0,
    scripts: tuple[str, ...] = (),
    styles: tuple[str, ...] = (),
) -> str:
    up = "../" * depth
    tags = "".join(f'<script src="{e(up + s)}"></script>' for s in scripts)
    links = "".join(f'<link rel="stylesheet" href="{e(up + s)}">' for s in styles)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title>"
        f'<link rel="stylesheet" href="{up}style.css">{links}</head><body>'
        f'<nav><a href="{up}index.html">overview</a></nav><h1>{e(title)}</h1>'
        f"{body}{tags}</body></html>"
    )


def short(commit: str | None) -> str:
    return (commit or "?")[:10]


def series_label(s: Series) -> str:
    return f"{s.strategy} · {s.scenario} · {params_text(s.params)} · {s.metric}"
