"""The dashboard's pages as files (no browser): what a machine page says about another
machine of the same host."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from historyruns import write_night

from harness import cli

pytestmark = pytest.mark.unit


def test_a_new_cpu_of_a_known_host_is_a_new_machine_with_what_changed(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    dirs = [
        write_night(tmp_path / "runs", night, {("none", 64): 1000.0}, rng, cpu_model=cpu)
        for night, cpu in enumerate(["EPYC 7313P", "EPYC 9354"])
    ]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "machine-2.html").read_text()
    assert "cpu_model: EPYC 7313P here EPYC 9354" in page


def test_a_night_without_some_probes_is_marked_on_the_pages(tmp_path: Path) -> None:
    """Three nights; the second ran where futex could not (run.json config.probes_unavailable),
    the third is an older run.json that says so only in a cell: both are marked, the first not."""
    rng = np.random.default_rng(6)
    dirs = [write_night(tmp_path / "runs", n, {("none", 64): 1000.0}, rng) for n in range(3)]
    why = "collector /x/futex is not built (run `make -C bpf`)"
    second = json.loads((dirs[1] / "run.json").read_text())
    second["config"]["probes_unavailable"] = {"futex": why}
    (dirs[1] / "run.json").write_text(json.dumps(second))
    third = json.loads((dirs[2] / "run.json").read_text())
    third["cells"][0]["probes"] = {"offwake": {"repeats": [], "unavailable": "no privilege"}}
    (dirs[2] / "run.json").write_text(json.dumps(third))
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(tmp_path / "site")]) == 0
    site = tmp_path / "site"
    (series_page,) = (site / "series").glob("*.html")
    text = series_page.read_text()
    assert f"probes missing: futex (futex: {why})" in html.unescape(text)  # the chart's mark
    assert "probes missing: offwake (offwake: no privilege)" in html.unescape(text)
    rows = re.findall(r"<tr><td><a href='[^']*'>(\w+-\w+)</a>.*?</tr>", text)
    assert len(rows) == 3
    notes = [
        re.search(r"<td>([^<>]*)</td></tr>$", row)
        for row in re.findall(r"<tr><td><a.*?</tr>", text)
    ]
    assert [n[1] if n else None for n in notes] == [
        "probes missing: offwake",
        "probes missing: futex",
        "",
    ]
    overview = (site / "index.html").read_text()
    assert "<td>probes missing: offwake</td></tr>" in overview  # the latest run's


def test_a_change_on_one_machine_of_two_with_one_run_id_links_that_machines_run(
    tmp_path: Path,
) -> None:
    """Two machines of a fleet, their runs started in the same seconds (one run id each night);
    only machine-b steps down 40% at night 10: the overview's row is machine-b's run."""
    dirs = []
    for folder, drop in (("b", 0.4), ("vm", 0.0)):  # vm's runs last: they won the id before
        rng = np.random.default_rng(7)
        for n in range(12):
            level = 1000.0 * (1 - drop if n >= 10 else 1)
            host = "machine-b" if folder == "b" else "vm"
            dirs.append(
                write_night(tmp_path / folder, n, {("none", 64): level}, rng, hostname=host)
            )
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(tmp_path / "site")]) == 0
    overview = (tmp_path / "site" / "index.html").read_text()
    (row,) = re.findall(r"<tr class='open regression'>.*?</tr>", overview, re.S)
    step = dirs[10].name  # machine-b's night 10
    assert re.search(rf"<a href='[^']*/b/{step}/report\.html'>{step}</a>", row), row
    assert "<svg class='spark'" in row  # the point is found in machine-b's series
