"""Writing the dashboard: plain HTML pages, a stylesheet, scripts and their data as
<script> files (no fetch, no inline script), and uPlot (vendored, MIT) for the charts, so
that it opens from file:// with no network. Every name from the history is HTML-escaped on
the server and set as text by the scripts."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from sqlalchemy import Connection

from harness.dashboard.context import Site, replace_file
from harness.dashboard.data import Series, load
from harness.dashboard.overview import OverviewPages
from harness.dashboard.suites import SuitePages

ASSETS = Path(__file__).resolve().parent / "assets"
# Copied into the site as they are: the site's own scripts and uPlot 1.6.32 with its licence.
ASSET_FILES = (
    "style.css",
    "dashboard.js",
    "grid.js",
    "chart.js",
    "compare.js",
    "uPlot.iife.min.js",
    "uPlot.min.css",
    "uPlot.LICENSE",
)


def build(site: Site) -> int:
    """Every file of the site under site.out; the number written."""
    site.out.mkdir(parents=True, exist_ok=True)
    for folder in ("series", "data"):
        real_folder(site.out / folder)
    for asset in ASSET_FILES:
        replace_file(site.out / asset, (ASSETS / asset).read_bytes())
    OverviewPages(site).write()
    grouped: dict[tuple[int, str], list[Series]] = defaultdict(list)
    for s in site.h.series.values():
        grouped[(s.machine_id, s.suite)].append(s)
    suites = SuitePages(site)
    for key in site.suite_page:
        suites.suite(key, grouped.get(key, []))
    for s in site.h.series.values():
        suites.series_page(s)
    return site.pages


def real_folder(path: Path) -> None:
    """`path` as a folder of its own: a symbolic link of that name (to anywhere) is removed,
    not followed, so that no page is written outside the site."""
    if path.is_symlink():
        path.unlink()
    path.mkdir(exist_ok=True)


def build_site(conn: Connection, out: Path) -> int:
    """Write the whole site under `out`; the number of files written."""
    return build(Site(load(conn), out))
