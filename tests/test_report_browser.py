"""report.html and real inferno flame graphs in headless Chromium: frames are drawn, every
link resolves, previews load, names are escaped.

Needs /usr/bin/chromium, /usr/bin/chromedriver (apt: chromium chromium-driver), selenium and
inferno 0.12.8 in .tools/bin; without them the tests skip, or fail with REQUIRE_BPF=1 or CI
set. The checks live in tests/browser.py for use on real run directories.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from browser import (
    check_images,
    check_links,
    check_svg_drawn,
    navigate,
)
from reportdata import EVIL, MUTEX_FRAME, build_run
from requirements import unmet
from rundocs import cell, run

from harness.report import write_all
from harness.stats import compare_cells

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
INFERNO = REPO / ".tools" / "bin"
FLAMEGRAPH = INFERNO / "inferno-flamegraph"
DIFF_FOLDED = INFERNO / "inferno-diff-folded"
INSTALL = "cargo install inferno --version 0.12.8 --locked --root .tools"


def require_inferno() -> None:
    for tool in (FLAMEGRAPH, DIFF_FOLDED):
        if not tool.exists():
            unmet(f"no {tool}: {INSTALL}")


def inferno_svg(folded: Path, svg: Path) -> None:
    with svg.open("wb") as out:
        subprocess.run(
            [str(FLAMEGRAPH), "--title", folded.name, str(folded)],
            stdout=out,
            check=True,
            timeout=60,
        )


def inferno_diff_svg(baseline: Path, folded: Path, svg: Path) -> None:
    diff = subprocess.run(
        [str(DIFF_FOLDED), str(baseline), str(folded)],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    with svg.open("wb") as out:
        subprocess.run(
            [str(FLAMEGRAPH), "--title", f"{folded.name} vs {baseline.name}"],
            input=diff,
            stdout=out,
            check=True,
            timeout=60,
        )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_inferno()
    path = tmp_path_factory.mktemp("runs") / "20261121T000107Z-43068e2"
    build_run(path, inferno_svg, inferno_diff_svg)
    write_all(path)
    return path


def test_flame_graphs_draw_frames(driver: Any, run_dir: Path) -> None:
    svgs = sorted((run_dir / "flame").glob("*.svg"))
    kinds = {svg.name.split(".")[-2] for svg in svgs}
    assert kinds == {"oncpu", "offcpu", "wakeups", "diff"}
    for svg in svgs:
        drawn = check_svg_drawn(driver, svg)
        # at least all, the client and the server roots and a few frames of each
        assert drawn >= 4, (svg, drawn)
    text = driver.execute_script("return document.documentElement.textContent")
    assert "client" in text


def test_differential_graph_has_the_lock_frame(driver: Any, run_dir: Path) -> None:
    check_svg_drawn(driver, run_dir / "flame" / "tokio-timeout_concurrency-256.diff.svg")
    titles = driver.execute_script(
        "return Array.from(document.querySelectorAll('#frames title'), t => t.textContent)"
    )
    assert any(MUTEX_FRAME in t for t in titles), titles


def test_every_report_link_resolves(driver: Any, run_dir: Path) -> None:
    checked = check_links(driver, run_dir / "report.html")
    svgs = {svg.name for folder in ("flame", "charts") for svg in (run_dir / folder).glob("*.svg")}
    linked = {Path(url.split("#")[0]).name for url in checked if url.endswith(".svg")}
    assert linked == svgs
    # The raw probe file whose path needs quoting (space, #) was followed too.
    assert any("evil%20cell%231" in url for url in checked), checked


def test_previews_load(driver: Any, run_dir: Path) -> None:
    # The flame graph previews and the charts the report opens with.
    images = [*run_dir.glob("flame/*.svg"), *run_dir.glob("charts/*.png")]
    assert check_images(driver, run_dir / "report.html") == len(images)


def test_report_shows_names_as_text_and_runs_no_script(driver: Any, run_dir: Path) -> None:
    navigate(driver, (run_dir / "report.html").as_uri())
    assert driver.execute_script("return document.scripts.length") == 0
    text = driver.execute_script("return document.body.innerText")
    assert EVIL in text
    assert MUTEX_FRAME in text
    assert "no CAP_BPF <here>" in text


def test_a_missing_file_or_anchor_fails_the_link_check(driver: Any, tmp_path: Path) -> None:
    (tmp_path / "there.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
    )
    page = tmp_path / "page.html"
    page.write_text('<a href="there.svg">ok</a><a id="x" href="#x">ok</a>')
    assert len(check_links(driver, page)) == 2
    page.write_text('<a href="there.svg">ok</a> <a href="flame/missing.svg">gone</a>')
    with pytest.raises(AssertionError, match=r"missing\.svg"):
        check_links(driver, page)
    page.write_text('<a href="#nowhere">gone</a>')
    with pytest.raises(AssertionError, match="nowhere"):
        check_links(driver, page)
    page.write_text('<img src="https://example.invalid/x.png">')
    with pytest.raises(AssertionError, match="offline"):
        check_links(driver, page)


def test_an_empty_svg_is_not_a_drawn_flame_graph(driver: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty.svg"
    empty.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>')
    with pytest.raises(AssertionError, match="none of its 0 frames"):
        check_svg_drawn(driver, empty)
    with pytest.raises(AssertionError, match="could not open"):
        check_svg_drawn(driver, tmp_path / "missing.svg")


_PAGE_WIDTHS = """
const page = document.scrollingElement;
return {scroll: page.scrollWidth, client: page.clientWidth,
        charts: Array.from(document.querySelectorAll('figure.chart img'), i => {
          const r = i.getBoundingClientRect();
          return {src: i.getAttribute('src'), right: r.right, shown: r.width}; })};
"""
_CHART_BOXES = """
const box = e => { const r = e.getBoundingClientRect();
                   return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
const legend = document.getElementById('legend');
return {legend: legend ? box(legend) : null,
        plots: Array.from(document.querySelectorAll('[id^="plot-area-"]'), box)};
"""


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and (b["top"] < a["bottom"])
    )


CPU_METRICS = ("client_cpu_ns_per_op", "server_cpu_ns_per_op", "cpu_ns_per_op")
STRATEGIES = ("none", "tokio-timeout", "tokio-timeout-alt", "tokio-timeout-legacy")
STRATEGIES += ("deadline-tracker", "scheduled-executor", "event-executor", "hashed-wheel")
STRATEGIES += ("hashed-wheel-offload",)


@pytest.fixture(scope="module")
def timers_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `make bench SUITES=timers QUICK=1`-sized run: 9 strategies x 2 concurrencies, ratio
    panels for ops/s and three CPUs per op, 18 latency lines."""
    metrics = [{"name": "ops_per_sec", "unit": "ops/s", "better": "higher"}]
    metrics += [{"name": name, "unit": "ns", "better": "lower"} for name in CPU_METRICS]
    cells = []
    for i, strategy in enumerate(STRATEGIES):
        for concurrency in (16, 256):
            k = 1.0 + 0.1 * i + concurrency / 1000
            repeats = [
                {
                    "ops_per_sec": 1e5 / k * f,
                    **{name: 5e3 * k * f for name in CPU_METRICS},
                    "latency_ns": {"p50": 2e5 * k, "p90": 5e5 * k, "p99": 2e6 * k, "p999": 9e6},
                }
                for f in (1.0, 0.97, 1.04, 0.99, 1.02)
            ]
            cells.append(cell(strategy, "steady", {"concurrency": concurrency}, repeats))
    doc = run(cells, metrics=metrics, comparisons=compare_cells(cells, "none", metrics))
    path = tmp_path_factory.mktemp("runs") / "20261128T000000Z-abc1234"
    path.mkdir()
    (path / "run.json").write_text(json.dumps(doc))
    write_all(path)
    return path


def test_charts_fit_a_1280_px_page_and_legends_stay_off_the_plots(
    driver: Any, timers_dir: Path
) -> None:
    run_dir = timers_dir
    driver.set_window_size(1280, 1000)
    try:
        check_images(driver, run_dir / "report.html")  # loaded, so laid out at their size
        page = driver.execute_script(_PAGE_WIDTHS)
    finally:
        driver.set_window_size(1400, 1000)
    kinds = {chart["src"].split(".")[-2] for chart in page["charts"]}
    assert kinds == {"ratios", "latency"}, page["charts"]
    assert page["client"] <= 1280
    assert page["scroll"] <= page["client"], page  # no horizontal scrollbar
    for chart in page["charts"]:
        assert chart["shown"] > 300 and chart["right"] <= page["client"], chart
    svgs = sorted((run_dir / "charts").glob("*.svg"))
    assert [p.stem for p in svgs] == sorted(p.stem for p in (run_dir / "charts").glob("*.png"))
    for svg in svgs:
        navigate(driver, svg.resolve().as_uri())
        boxes = driver.execute_script(_CHART_BOXES)
        assert boxes["plots"], svg
        if svg.name.endswith(".latency.svg"):
            assert boxes["legend"] is not None, svg
        if boxes["legend"] is not None:
            for plot in boxes["plots"]:
                assert not overlap(boxes["legend"], plot), (svg.name, boxes)
