"""CPU per op in the tables and reports: its columns, the note on CPU-per-op differences that
are significant where ops/s ones are not, and the charts report.html and summary.md open
with."""

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rundocs import cell, run
from timerscells import timers_metrics

from harness.report import write_all
from harness.rundoc.model import RunDoc
from harness.stats import compare_cells
from harness.tables import print_run

pytestmark = pytest.mark.unit

METRICS = timers_metrics("ops_per_sec", "client_cpu_ns_per_op", "server_cpu_ns_per_op")


def repeats(ops: list[float], client_cpu: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "ops_per_sec": o,
            "client_cpu_ns_per_op": c,
            "server_cpu_ns_per_op": 100.0 + i,
            "latency_ns": {"p50": 1e6, "p90": 2e6, "p99": 4e6, "p999": 8e6, "max": 9e6},
        }
        for i, (o, c) in enumerate(zip(ops, client_cpu, strict=True))
    ]


def doc() -> dict[str, Any]:
    # ops/s overlaps (no significance), client CPU/op is cleanly 1.5x the baseline's.
    cells = [
        cell("none", "steady", {}, repeats([300e3, 500e3, 400e3, 450e3, 350e3], [800.0] * 5)),
        cell("wheel", "steady", {}, repeats([320e3, 480e3, 380e3, 460e3, 340e3], [1200.0] * 5)),
    ]
    for i, c in enumerate(cells[1]["repeats"]):
        c["client_cpu_ns_per_op"] += i  # no ties
    d = run(cells, metrics=METRICS)
    d["comparisons"] = compare_cells(cells, "none", METRICS)
    return d


def test_the_table_shows_cpu_per_op_and_the_note_names_what_only_cpu_tells_apart() -> None:
    out = io.StringIO()
    print_run(RunDoc.model_validate(doc()), Console(file=out, width=220, color_system=None))
    text = out.getvalue()
    assert "client CPU/op" in text and "server CPU/op" in text
    notes = [line for line in text.splitlines() if line.startswith("CPU per op tells")]
    assert len(notes) == 1, text
    assert "steady wheel" in notes[0] and "client CPU/op 1.5" in notes[0], notes
    assert "server CPU/op" not in notes[0]  # not significant: not named


def test_reports_open_with_the_charts(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps(doc()))
    write_all(tmp_path)
    assert (tmp_path / "charts" / "steady.ratios.png").stat().st_size > 0
    assert (tmp_path / "charts" / "steady.latency.png").stat().st_size > 0
    html = (tmp_path / "report.html").read_text()
    assert html.index('id="charts"') < html.index('id="summary"') < html.index('id="findings"')
    assert "charts/steady.ratios.png" in html and "CPU per op tells" in html
    summary = (tmp_path / "summary.md").read_text().splitlines()
    assert summary[2] == "![steady: ratio to none](charts/steady.ratios.png)"
    assert summary.index("**What was run**") > summary.index(
        "![steady: latency percentiles](charts/steady.latency.png)"
    )
