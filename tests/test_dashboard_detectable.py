"""The minimum detectable change on the dashboard: each series page and grid cell says the
series' figure before its latest run (power.py's, from the runs before it), and a change since
the previous run smaller than that is not coloured; grid cells write their figures as the
tables do."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from browser import navigate, require_browser, start_driver, wait_for
from rundocs import cell, config, run

from harness import cli
from harness.history.power import min_detectable, noise_of

NIGHTS = 4
# ops/s per strategy and night. `hidden`: +5% on the last night, past its noise floor (1%
# with three run-to-run changes) and its runs' intervals, but its nights before moved 4-7%,
# so the detector needs a larger step. `stepped`: flat, then 20% up. `big` and `huge`: flat,
# figures the tables write as 258.6k and 1.66M.
LEVELS = {
    "hidden": [1000.0, 1040.0, 970.0, 1020.0],
    "stepped": [1000.0, 1000.0, 1000.0, 1200.0],
    "big": [258_600.0] * NIGHTS,
    "huge": [1.66e6] * NIGHTS,
}
SPREAD = 0.002  # of the repeats within a run


def write_nights(root: Path) -> list[Path]:
    rng = np.random.default_rng(11)
    dirs = []
    for night in range(NIGHTS):
        cells = []
        for strategy, levels in LEVELS.items():
            level = levels[night]
            repeats = [
                {"ops_per_sec": level * (1 + SPREAD * rng.standard_normal())} for _ in range(5)
            ]
            cells.append(cell(strategy, "steady", {"concurrency": 64}, repeats))
        run_id = f"202501{night + 1:02d}T000000Z-abc1234"
        doc = run(
            cells,
            run_id=run_id,
            started_at=f"2025-01-{night + 1:02d}T00:00:00Z",
            finished_at=f"2025-01-{night + 1:02d}T00:10:00Z",
            config=config(strategies=sorted(LEVELS), params={"concurrency": [64]}),
        )
        folder = root / run_id
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(doc))
        dirs.append(folder)
    return dirs


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], str, Path]:
    """The runs, the history's URL and its dashboard."""
    root = tmp_path_factory.mktemp("detectable")
    dirs = write_nights(root / "runs")
    url = f"sqlite:///{root / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(root / "site")]) == 0
    return dirs, url, root / "site"


def suite_data(site: Path) -> dict[str, Any]:
    text = (site / "data" / "suite-1.js").read_text()
    data: dict[str, Any] = json.loads(text.removeprefix("window.SUITE = ").removesuffix(";\n"))
    return data


@pytest.mark.unit
def test_each_series_page_and_cell_says_its_minimum_detectable_change_before_the_latest_run(
    history: tuple[Path, str, Path],
) -> None:
    """The figure is power.py's, from the runs' repeats before the latest run."""
    runs, _, site = history
    cells = {c["strategy"]: c for c in suite_data(site)["cells"]}
    assert set(cells) == set(LEVELS)
    for strategy, c in cells.items():
        repeats = [
            [
                r["ops_per_sec"]
                for r in next(x for x in doc["cells"] if x["strategy"] == strategy)["repeats"]
            ]
            for doc in (json.loads((d / "run.json").read_text()) for d in runs[:-1])
        ]
        noise = noise_of([float(np.median(r)) for r in repeats], repeats)
        step = min_detectable(noise, 5, 1)
        assert step is not None
        assert c["least"] == pytest.approx(step) and c["detects"] == f"detects {step:.1%}", c
        page = unescape((site / "series" / f"{c['id']}.html").read_text())
        assert (
            f"minimum detectable change: {step:.1%} the night it lands (before the latest run, "
            f"from the {NIGHTS - 1} runs before it: noise within runs {noise.within:.1%}, "
            f"between nights {noise.between:.1%}; at 5 repeats a run)"
        ) in page, page
    # A step's own night is not its noise: 20% up after flat nights is past the figure before
    # it; the 5% of a series whose nights moved 4-7% is not.
    assert cells["stepped"]["least"] < 0.05 and cells["hidden"]["least"] > 0.06


@pytest.mark.unit
def test_grid_cells_carry_figures_as_the_tables_write_them(
    history: tuple[list[Path], str, Path],
) -> None:
    _, _, site = history
    cells = {c["strategy"]: c for c in suite_data(site)["cells"]}
    assert re.fullmatch(r"25[89]\.\dk", cells["big"]["latest_text"]), cells["big"]
    assert re.fullmatch(r"1\.6[5-7]M", cells["huge"]["latest_text"]), cells["huge"]
    assert re.fullmatch(r"1\.0\dk", cells["hidden"]["latest_text"]), cells["hidden"]


def grid(driver: Any) -> dict[str, dict[str, str]]:
    """Row header -> the cell's tone and text (one column: concurrency 64)."""
    rows = driver.execute_script(
        """
        return Array.from(document.getElementById('grid').rows).slice(1).map(row => ({
          row: row.cells[0].innerText, tone: row.cells[1].dataset.tone,
          text: row.cells[1].innerText, title: row.cells[1].title}));
        """
    )
    return {r["row"]: r for r in rows}


@pytest.mark.browser
def test_a_change_smaller_than_the_minimum_detectable_change_is_not_coloured(
    history: tuple[list[Path], str, Path],
) -> None:
    require_browser()
    _, _, site = history
    driver = start_driver()
    try:
        navigate(driver, (site / "suite-1.html").as_uri())
        wait_for(driver, "return document.body.dataset.rendered", "the grid")
        cells = grid(driver)
        hidden, stepped = cells["hidden"], cells["stepped"]
        assert "+5." in hidden["text"] and "since previous" in hidden["text"], hidden
        assert hidden["tone"] == "same", hidden
        assert re.search(r"detects \d+\.\d%", hidden["text"]) and "detects" in hidden["title"]
        assert stepped["tone"] == "better" and "+20." in stepped["text"], stepped
        assert re.fullmatch(r"25[89]\.\dk", cells["big"]["text"].split("\n")[0]), cells["big"]
        assert re.fullmatch(r"1\.6[5-7]M", cells["huge"]["text"].split("\n")[0]), cells["huge"]
    finally:
        driver.quit()
