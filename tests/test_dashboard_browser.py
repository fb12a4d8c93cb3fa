"""The history dashboard in headless Chromium: charts drawn, the compare view filled by its
script, no console error, no request other than file://, every link resolves, and names
that look like markup shown as text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
import pytest
from browser import check_links, navigate, require_browser, start_driver
from historyruns import write_night

from harness import cli

pytestmark = pytest.mark.browser

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    require_browser()
    chrome = start_driver()
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dash")
    rng = np.random.default_rng(3)
    dirs = []
    for night in range(8):
        drop = 0.85 if night >= 4 else 1.0
        levels = {("none", 64): 1000.0, (EVIL, 64): 2000.0 * drop}
        dirs.append(write_night(root / "runs", night, levels, rng, hostname=f"box{EVIL}"))
    url = f"sqlite:///{root / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(root / "site")]) == 0
    return root / "site"


def console_errors(driver: Any) -> list[str]:
    return [m["message"] for m in driver.get_log("browser") if m["level"] == "SEVERE"]


def requests(driver: Any) -> list[str]:
    names: list[str] = driver.execute_script(
        "return performance.getEntriesByType('resource').map(r => r.name)"
    )
    return [name for name in names if not name.startswith("file:")]


def pages(site: Path) -> list[Path]:
    return sorted(site.glob("*.html")) + sorted(site.glob("series/*.html"))


def test_every_page_opens_offline_without_errors_and_escapes_names(driver: Any, site: Path) -> None:
    for html in pages(site):
        navigate(driver, html.as_uri())
        assert console_errors(driver) == [], html
        assert requests(driver) == [], html
        scripts = driver.execute_script(
            "return Array.from(document.scripts, s => s.getAttribute('src'))"
        )
        assert None not in scripts, f"{html}: an inline script element"
        assert "alert(1)" not in str(driver.execute_script("return window.name")), html


def test_charts_are_drawn_and_the_evil_name_shows_as_text(driver: Any, site: Path) -> None:
    series_pages = sorted(site.glob("series/*.html"))
    title = "timers · &lt;script&gt;alert(1)&lt;/script&gt; · steady"
    evil_page = next(p for p in series_pages if title in p.read_text())
    navigate(driver, evil_page.as_uri())
    drawn = driver.execute_script(
        "return Array.from(document.querySelectorAll('svg.trend circle.point'))"
        ".filter(c => c.getBoundingClientRect().width > 0).length"
    )
    assert drawn == 8
    assert EVIL in driver.execute_script("return document.body.innerText")
    flames = driver.execute_script(
        "return Array.from(document.querySelectorAll('a'), a => a.textContent)"
        ".filter(t => t === 'flame').length"
    )
    assert flames == 8  # every run's flame graph of this cell
    regressions = driver.execute_script(
        "return document.querySelectorAll('line.regression').length"
    )
    assert regressions >= 1
    navigate(driver, (site / "index.html").as_uri())
    assert EVIL in driver.execute_script("return document.body.innerText")


def test_the_compare_view_fills_its_table(driver: Any, site: Path) -> None:
    (compare,) = sorted(site.glob("compare-*.html"))
    navigate(driver, compare.as_uri())
    rows = driver.execute_script(
        "return document.body.dataset.compared === 'yes' && "
        "document.querySelectorAll('#compare tr').length"
    )
    assert rows == 3  # header, none, the evil strategy
    assert EVIL in driver.execute_script("return document.getElementById('compare').innerText")
    assert console_errors(driver) == []


def linked_files(checked: list[str]) -> set[Path]:
    return {Path(url2pathname(urlparse(url).path)).resolve() for url in checked}


def test_every_link_resolves(driver: Any, site: Path) -> None:
    """Each page's links resolve, and they are the links the page must have: the stylesheet
    and the overview, the suite and machine pages, every run's report and flame graph."""
    runs = sorted((site.parent / "runs").iterdir())
    reports = {run.resolve() / "report.html" for run in runs}
    common = {(site / name).resolve() for name in ("style.css", "index.html")}
    overview = linked_files(check_links(driver, site / "index.html"))
    assert common | {(site / "suite-1.html").resolve(), (site / "machine-1.html").resolve()} <= (
        overview
    )
    assert runs[-1].resolve() / "report.html" in overview
    for html in sorted(site.glob("series/*.html"))[:3]:
        linked = linked_files(check_links(driver, html))
        assert common | reports | {(site / "suite-1.html").resolve()} <= linked, html
        flames = {path for path in linked if path.suffix == ".svg"}
        assert len(flames) == len(runs) and all(
            f.is_relative_to(site.parent / "runs") for f in flames
        )
