"""The history dashboard in headless Chromium: what changed first on the overview, the suite's
heat grid (its colours, the metric selector, a filter), a series chart's tooltip and its
click-through to a report and the compare view, no page with more than 150 links, no
console error, no request other than file://, every link resolves, and names that look like
markup shown as text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
import pytest
from browser import check_links, navigate, wait_for
from rundocs import cell, config, run

from harness import cli

pytestmark = pytest.mark.browser

EVIL = "<script>alert(1)</script>"
NIGHTS = 10
# ops/s per (strategy, concurrency); the evil strategy loses 15% on the last night.
LEVELS = {"none": 1000.0, "fast": 1500.0, EVIL: 2000.0}
LAST_DROP = 0.85
MAX_LINKS = 150


def write_night(
    root: Path,
    night: int,
    levels: dict[tuple[str, int], float],
    rng: np.random.Generator,
    hostname: str,
    spread: float = 0.01,
) -> Path:
    """Night `night` of suite timers: 5 repeats of ops_per_sec around each cell's level and
    latency_ns.p50 at 5e5 / level, `spread` noise (1%); a report and a flame graph per cell."""
    cells = []
    for (strategy, concurrency), level in levels.items():
        repeats = [
            {
                "ops_per_sec": level * (1 + spread * rng.standard_normal()),
                "latency_ns": {"p50": 5e5 / level * (1 + spread * rng.standard_normal())},
            }
            for _ in range(5)
        ]
        flame = f"flame/{len(cells)}.svg"
        cells.append(
            cell(strategy, "steady", {"concurrency": concurrency}, repeats, profile={"svg": flame})
        )
    run_id = f"202501{night + 1:02d}T000000Z-c{night:06d}"
    doc = run(
        cells,
        run_id=run_id,
        started_at=f"2025-01-{night + 1:02d}T00:00:00Z",
        finished_at=f"2025-01-{night + 1:02d}T00:10:00Z",
        git={"commit": f"c{night:06d}{'0' * 33}", "dirty": False},
        config=config(strategies=sorted({s for s, _ in levels}), params={"concurrency": [64]}),
        metrics=[
            {"name": "ops_per_sec", "unit": "ops/s", "better": "higher"},
            {"name": "latency_ns.p50", "unit": "ns", "better": "lower"},
        ],
    )
    doc["host"] |= {"hostname": hostname}
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(doc))
    (folder / "report.html").write_text(f"<!doctype html><title>report {run_id}</title>")
    (folder / "flame").mkdir()
    for i in range(len(cells)):
        (folder / "flame" / f"{i}.svg").write_text(
            '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
        )
    return folder


def built(
    root: Path, nights: int, levels: Any, hostname: str = "box", spread: float = 0.01
) -> Path:
    rng = np.random.default_rng(3)
    dirs = [
        write_night(root / "runs", night, levels(night), rng, hostname, spread)
        for night in range(nights)
    ]
    url = f"sqlite:///{root / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(root / "site")]) == 0
    return root / "site"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten nights of 3 strategies x 2 concurrencies x 2 metrics; the evil strategy 15% slower
    on the last night."""

    def levels(night: int) -> dict[tuple[str, int], float]:
        drop = LAST_DROP if night == NIGHTS - 1 else 1.0
        return {
            (s, c): level * (drop if s == EVIL else 1.0)
            for s, level in LEVELS.items()
            for c in (64, 256)
        }

    return built(tmp_path_factory.mktemp("dash"), NIGHTS, levels, hostname=f"box{EVIL}")


def console_errors(driver: Any) -> list[str]:
    return [m["message"] for m in driver.get_log("browser") if m["level"] == "SEVERE"]


def requests(driver: Any) -> list[str]:
    names: list[str] = driver.execute_script(
        "return performance.getEntriesByType('resource').map(r => r.name)"
    )
    return [name for name in names if not name.startswith("file:")]


def pages(site: Path) -> list[Path]:
    return sorted(site.glob("*.html")) + sorted(site.glob("series/*.html"))


def text(driver: Any, selector: str = "body") -> str:
    return str(driver.execute_script(f"return document.querySelector({selector!r}).innerText"))


def series_page(site: Path, strategy: str, concurrency: int, metric: str) -> Path:
    title = f"timers · {strategy} · steady · concurrency={concurrency} · {metric}"
    for html in sorted(site.glob("series/*.html")):
        if f"<title>{title.replace('<', '&lt;').replace('>', '&gt;')}</title>" in html.read_text():
            return html
    raise AssertionError(f"no series page {title}")


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


def test_the_overview_opens_with_what_changed_largest_first(driver: Any, site: Path) -> None:
    navigate(driver, (site / "index.html").as_uri())
    headings = driver.execute_script(
        "return Array.from(document.querySelectorAll('h2'), h => h.textContent)"
    )
    assert headings[:3] == ["What changed", "Machines", "Latest runs"]
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.triage tr'), r => r.innerText)"
    )[1:]
    # The evil strategy's 4 series (2 concurrencies x 2 metrics) regressed on the last night.
    evil = [r for r in rows if EVIL in r and "regression" in r]
    assert len(evil) == 4, rows
    assert rows[:4] == evil, "the largest changes over noise come first"
    last = f"202501{NIGHTS:02d}T000000Z-c{NIGHTS - 1:06d}"
    first = evil[0]
    assert last in first and f"c{NIGHTS - 2:06d}000..c{NIGHTS - 1:06d}000" in first, first
    assert "open" in first and "\N{MULTIPLICATION SIGN} noise" in first
    sizes = [float(r.split("\t")[2].split("%")[0]) for r in rows]
    assert all(abs(s) > 10 for s in sizes[:4]), sizes
    drawn = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.triage svg.spark polyline'))"
        ".filter(p => p.getBoundingClientRect().width > 0).length"
    )
    assert drawn == len(rows)
    assert EVIL in text(driver)


def grid_cells(driver: Any) -> dict[str, Any]:
    """(row header, column header) -> the cell's tone, background and text."""
    return {
        f"{c['row']}|{c['column']}": c
        for c in driver.execute_script(
            """
            const table = document.getElementById('grid');
            const heads = Array.from(table.rows[0].cells, c => c.innerText.replace('\\n', ' '));
            const out = [];
            for (const row of Array.from(table.rows).slice(1)) {
              Array.from(row.cells).slice(1).forEach((td, i) => out.push({
                row: row.cells[0].innerText, column: heads[i + 1], tone: td.dataset.tone,
                background: getComputedStyle(td).backgroundColor, text: td.innerText}));
            }
            return out;
            """
        )
    }


def test_the_suite_grid_is_coloured_by_change_and_by_baseline(driver: Any, site: Path) -> None:
    navigate(driver, (site / "suite-1.html").as_uri())
    wait_for(driver, "return document.body.dataset.rendered", "the grid")
    cells = grid_cells(driver)
    assert len(cells) == 6  # 3 strategies x 2 concurrencies
    evil = cells[f"{EVIL}|steady concurrency=64"]
    assert evil["tone"] == "worse" and evil["background"].startswith("rgba(220, 38, 38"), evil
    assert "-15" in evil["text"] and "since previous" in evil["text"]
    steady = cells["none (baseline)|steady concurrency=64"]
    assert steady["tone"] == "same" and steady["background"] == "rgba(0, 0, 0, 0)"
    # 1000, 1% noise, written as the tables write it (998.2, 1.01k).
    assert re.fullmatch(r"9[7-9]\d\.\d|1\.0[0-3]k", steady["text"].split("\n")[0]), steady
    sparks = driver.execute_script(
        "return Array.from(document.querySelectorAll('#grid svg.spark polyline'))"
        ".filter(p => p.getBoundingClientRect().width > 0).length"
    )
    assert sparks == 6
    # Against the baseline the evil strategy is still 1.7 times as fast: better.
    driver.execute_script(
        "const s = document.getElementById('against'); s.value = 'baseline';"
        "s.dispatchEvent(new Event('change'))"
    )
    wait_for(driver, "return document.body.dataset.rendered.endsWith('/baseline')", "recolour")
    cells = grid_cells(driver)
    evil = cells[f"{EVIL}|steady concurrency=64"]
    assert evil["tone"] == "better" and evil["background"].startswith("rgba(22, 163, 74"), evil
    ratio = float(evil["text"].split("\n")[2].removesuffix("\N{MULTIPLICATION SIGN} baseline"))
    assert 1.6 < ratio < 1.8, evil  # 1700 / 1000, each with 1% noise
    assert cells["none (baseline)|steady concurrency=256"]["tone"] == "same"


def test_a_change_the_runs_intervals_do_not_support_is_not_coloured(
    driver: Any, tmp_path: Path
) -> None:
    # Two nights with 25% spread between repeats (fixed seed): the level drops 10%, and the
    # medians move past the 1% floor two runs give the series but stay inside each other's
    # intervals (uncoloured; before, "better"). A 40% drop is past both.
    def levels(night: int) -> dict[tuple[str, int], float]:
        drop = {64: 0.9, 256: 0.6} if night == 1 else {64: 1.0, 256: 1.0}
        return {("none", c): 1000.0 * drop[c] for c in (64, 256)}

    site = built(tmp_path, 2, levels, spread=0.25)
    navigate(driver, (site / "suite-1.html").as_uri())
    wait_for(driver, "return document.body.dataset.rendered", "the grid")
    cells = grid_cells(driver)
    noisy = cells["none (baseline)|steady concurrency=64"]
    assert "since previous" in noisy["text"] and noisy["text"].split("\n")[1] != "+0.0%", noisy
    assert noisy["tone"] == "same" and noisy["background"] == "rgba(0, 0, 0, 0)", noisy
    assert cells["none (baseline)|steady concurrency=256"]["tone"] == "worse"
    assert console_errors(driver) == []


def test_the_metric_selector_and_a_filter(driver: Any, site: Path) -> None:
    navigate(driver, (site / "suite-1.html").as_uri())
    wait_for(driver, "return document.body.dataset.rendered", "the grid")
    metrics = driver.execute_script(
        "return Array.from(document.getElementById('metric').options, o => o.value)"
    )
    assert sorted(metrics) == ["latency_ns.p50", "ops_per_sec"]
    driver.execute_script(
        "const s = document.getElementById('metric'); s.value = 'latency_ns.p50';"
        "s.dispatchEvent(new Event('change'))"
    )
    wait_for(driver, "return document.body.dataset.rendered.startsWith('latency')", "metric")
    cells = grid_cells(driver)
    latency = cells["none (baseline)|steady concurrency=64"]
    assert 490 < float(latency["text"].split("\n")[0].removesuffix("ns")) < 510, latency
    # Latency up 1/0.85: worse for a lower-is-better metric.
    assert cells[f"{EVIL}|steady concurrency=256"]["tone"] == "worse"
    assert "latency_ns.p50 (ns)" in text(driver, "#grid")
    hrefs = driver.execute_script(
        "return Array.from(document.querySelectorAll('#grid a'), a => a.getAttribute('href'))"
    )
    assert series_page(site, "none", 64, "latency_ns.p50").name in " ".join(hrefs)
    # Filters: one concurrency, then one strategy.
    driver.execute_script(
        "const s = document.querySelector('select[data-param=concurrency]'); s.value = '256';"
        "s.dispatchEvent(new Event('change'))"
    )
    cells = grid_cells(driver)
    assert sorted(cells) == sorted(
        f"{s}|steady concurrency=256" for s in (EVIL, "fast", "none (baseline)")
    )
    driver.execute_script(
        "const s = document.getElementById('f-strategy'); s.value = 'fast';"
        "s.dispatchEvent(new Event('change'))"
    )
    assert sorted(grid_cells(driver)) == ["fast|steady concurrency=256"]
    assert console_errors(driver) == []


def hover(driver: Any, index: int) -> None:
    """Move the mouse over the chart at the run `index`."""
    from selenium.webdriver.common.action_chains import ActionChains

    x, y, left, top = driver.execute_script(
        f"""
        const u = window.dashboardChart;
        const box = u.over.getBoundingClientRect();
        const x = Math.min(u.valToPos({index}, 'x'), box.width - 2);  // inside the last pixel
        return [x, box.height / 2, box.width / 2, box.height / 2];
        """
    )
    over = driver.find_element("css selector", ".u-over")
    ActionChains(driver).move_to_element_with_offset(over, x - left, y - top).perform()


def test_a_hover_shows_value_interval_run_commit_and_machine(driver: Any, site: Path) -> None:
    page = series_page(site, EVIL, 64, "ops_per_sec")
    navigate(driver, page.as_uri())
    wait_for(driver, "return document.body.dataset.charted", "the chart")
    hover(driver, NIGHTS - 1)
    wait_for(driver, "return !document.getElementById('tip').hidden", "the tooltip")
    tip = text(driver, "#tip")
    assert f"run 202501{NIGHTS:02d}T000000Z-c{NIGHTS - 1:06d}" in tip, tip
    assert f"commit c{NIGHTS - 1:06d}000" in tip
    assert f"machine box{EVIL}" in tip and "interval " in tip
    assert "regression -15" in tip, tip
    value = float(tip.split("\n")[0].split()[0])
    assert 1600 < value < 1800
    hover(driver, 2)
    wait_for(driver, "return document.getElementById('tip').dataset.index === '2'", "run 3")
    assert "run 20250103T000000Z-c000002" in text(driver, "#tip")
    # The latest runs' table writes figures as the terminal tables do (1.70k, not 1.7e+03).
    median, interval = driver.execute_script(
        "const r = document.querySelectorAll('table tr')[1].cells;"
        "return [r[1].innerText, r[2].innerText]"
    )
    assert median.endswith("k") and 1.6 < float(median[:-1]) < 1.8, median
    assert interval.endswith("k") and "\N{EN DASH}" in interval and "e+" not in interval, interval
    assert console_errors(driver) == []


def test_zoom_and_a_click_through_to_the_report_and_compare(driver: Any, site: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    page = series_page(site, EVIL, 64, "ops_per_sec")
    navigate(driver, page.as_uri())
    wait_for(driver, "return document.body.dataset.charted", "the chart")
    # Drag from run 5 to run 8: the x scale shows those runs.
    over = driver.find_element("css selector", ".u-over")
    x5, x8, width = driver.execute_script(
        "const u = window.dashboardChart; const b = u.over.getBoundingClientRect();"
        "return [u.valToPos(5, 'x'), u.valToPos(8, 'x'), b.width]"
    )
    ActionChains(driver).move_to_element_with_offset(
        over, x5 - width / 2, 0
    ).click_and_hold().move_by_offset(x8 - x5, 0).release().perform()
    lo, hi = driver.execute_script(
        "const x = window.dashboardChart.scales.x; return [x.min, x.max]"
    )
    assert 4.5 < lo < 5.5 and 7.5 < hi < 8.5, (lo, hi)
    driver.find_element("id", "reset").click()
    # Click run 6, then run 10 (the regression): the picked panel links its report, the
    # compare view of it and the run before, and of it and run 6.
    for index in (5, NIGHTS - 1):
        hover(driver, index)
        ActionChains(driver).click().perform()
        wait_for(
            driver, f"return document.getElementById('picked').dataset.index === '{index}'", "pick"
        )
    links = driver.execute_script(
        "return Array.from(document.querySelectorAll('#picked a'), a => [a.textContent, a.href])"
    )
    assert dict(links)["compare with 20250106T000000Z-c000005"].endswith(
        f"#a=20250106T000000Z-c000005&b=202501{NIGHTS:02d}T000000Z-c{NIGHTS - 1:06d}"
    )
    report = dict(links)["its report"]
    assert report.endswith(f"202501{NIGHTS:02d}T000000Z-c{NIGHTS - 1:06d}/report.html")
    compare = dict(links)["compare with the run before"]
    navigate(driver, compare)
    wait_for(driver, "return document.body.dataset.compared", "the compare table")
    assert driver.execute_script("return document.body.dataset.compared") == (
        f"202501{NIGHTS - 1:02d}T000000Z-c{NIGHTS - 2:06d} "
        f"202501{NIGHTS:02d}T000000Z-c{NIGHTS - 1:06d}"
    )
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#compare tr'), r => r.innerText)"
    )
    evil = [r for r in rows if EVIL in r and "ops_per_sec" in r]
    assert len(evil) == 2 and all("0.8" in r.split("\t")[3] for r in evil), evil
    navigate(driver, report)
    assert driver.title.startswith("report ")


def test_the_compare_view_fills_its_table(driver: Any, site: Path) -> None:
    (compare,) = sorted(site.glob("compare-*.html"))
    navigate(driver, compare.as_uri())
    wait_for(driver, "return document.body.dataset.compared", "the compare table")
    rows = driver.execute_script("return document.querySelectorAll('#compare tr').length")
    assert rows == 1 + 12  # header, 3 strategies x 2 concurrencies x 2 metrics
    assert EVIL in text(driver, "#compare")
    assert console_errors(driver) == []


def linked_files(checked: list[str]) -> set[Path]:
    return {Path(url2pathname(urlparse(url).path)).resolve() for url in checked}


def test_every_link_resolves(driver: Any, site: Path) -> None:
    """Each page's links resolve, and they are the links the page must have: the stylesheet
    and the overview, the suite and machine pages, the runs' reports and flame graphs."""
    runs = sorted((site.parent / "runs").iterdir())
    reports = {run.resolve() / "report.html" for run in runs}
    common = {(site / name).resolve() for name in ("style.css", "index.html")}
    overview = linked_files(check_links(driver, site / "index.html"))
    assert common | {(site / "suite-1.html").resolve(), (site / "machine-1.html").resolve()} <= (
        overview
    )
    assert runs[-1].resolve() / "report.html" in overview
    grid = linked_files(check_links(driver, site / "suite-1.html"))
    assert len({p for p in grid if p.parent.name == "series"}) == 6
    for html in sorted(site.glob("series/*.html"))[:3]:
        linked = linked_files(check_links(driver, html))
        assert common | reports | {(site / "suite-1.html").resolve()} <= linked, html
        assert (site / "uPlot.min.css").resolve() in linked
        flames = {path for path in linked if path.suffix == ".svg"}
        assert len(flames) == len(runs) and all(
            f.is_relative_to(site.parent / "runs") for f in flames
        )


@pytest.fixture(scope="module")
def big_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of 16 strategies x 5 concurrencies x 2 metrics (160 series), 3 nights: the old
    suite page linked each of them (80 cells and 80 "other series")."""
    strategies = ["none", *(f"s{i}" for i in range(1, 16))]

    def levels(night: int) -> dict[tuple[str, int], float]:
        return {(s, c): 1000.0 + 100 * i for i, s in enumerate(strategies) for c in range(1, 6)}

    return built(tmp_path_factory.mktemp("big"), 3, levels)


def test_no_page_has_more_than_150_links(driver: Any, big_site: Path) -> None:
    counted = {}
    for html in [*sorted(big_site.glob("*.html")), sorted(big_site.glob("series/*.html"))[0]]:
        navigate(driver, html.as_uri())
        counted[html.name] = driver.execute_script(
            "return document.querySelectorAll('a[href]').length"
        )
    assert max(counted.values()) <= MAX_LINKS, counted
    assert counted["suite-1.html"] >= 80  # the grid's 80 cells of one metric
