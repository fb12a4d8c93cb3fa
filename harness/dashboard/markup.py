"""The HTML of the dashboard's pages: escaping, the page around a body, the names of things
shown on them. Every name from the history is HTML-escaped here and set as text by the
scripts."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from harness.dashboard.data import Series

# Runs a sparkline shows.
SPARK_RUNS = 60


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def params_text(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


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
