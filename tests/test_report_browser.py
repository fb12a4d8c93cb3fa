"""report.html and real inferno flame graphs in headless Chromium: frames are drawn, every
link resolves, previews load, names are escaped.

Needs /usr/bin/chromium, /usr/bin/chromedriver (apt: chromium chromium-driver), selenium and
inferno 0.12.8 in .tools/bin; without them the tests skip, or fail with REQUIRE_BPF=1 or CI
set. The checks live in tests/browser.py for use on real run directories.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import (
    check_images,
    check_links,
    check_svg_drawn,
    navigate,
    require_browser,
    start_driver,
)
from reportdata import EVIL, MUTEX_FRAME, build_run
from requirements import unmet

from harness.report import write_all

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
def driver() -> Iterator[Any]:
    require_browser()
    d = start_driver()
    try:
        yield d
    finally:
        d.quit()


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
    svgs = {svg.name for svg in (run_dir / "flame").glob("*.svg")}
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
