"""What `make nightly` does, twice, with the fixture suite: bench, import into the default
database (results/history.sqlite), confirm, dashboard, regressions: two points per series."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from conftest import run_harness

pytestmark = pytest.mark.unit


def test_two_nightly_runs_give_two_points_per_series(harness_env: dict[str, str]) -> None:
    results = Path(harness_env["HARNESS_RESULTS"])
    for _ in range(2):
        for args in (
            ["bench", "--quick"],
            ["history", "import"],
            ["history", "confirm"],
            ["dashboard"],
        ):
            done = run_harness(args, harness_env)
            assert done.returncode == 0, done.stderr
            if args == ["history", "confirm"]:  # two runs a series: no good run before the last
                assert "no provisional change" in done.stdout, done.stdout
        regressions = run_harness(["history", "regressions"], harness_env)
        assert regressions.returncode == 0, regressions.stdout  # two runs: nothing to say yet
    assert (results / "history.sqlite").is_file()
    pages = sorted((results / "dashboard" / "series").glob("*.html"))
    assert pages
    for page in pages:
        # The chart's data: a point per run, which chart.js hands to uPlot.
        found = re.search(r"data-series='([^']*)'", page.read_text())
        assert found, page
        chart = json.loads(html.unescape(found[1]))
        assert len(chart["points"]) == 2, (page, chart)
    listing = run_harness(["history", "list"], harness_env)
    assert len(listing.stdout.splitlines()) == 3  # heading and two runs
