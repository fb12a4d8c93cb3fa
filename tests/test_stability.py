"""Stability warnings (say when the machine is the noise): spread, bimodal, drift, recorded
per cell in run.json and printed under the table."""

import io
from pathlib import Path

import pytest
from rich.console import Console
from rundocs import cell, run

from harness.run.recorder import RunRecord
from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import RunDoc as Run
from harness.stability import cell_warnings, spearman_trend, stability_notes, warnings_for
from harness.tables import print_run

pytestmark = pytest.mark.unit


def kinds(values: list[float]) -> list[str]:
    return [w.split(":")[0] for w in warnings_for(values)]


def test_steady_repeats_raise_nothing() -> None:
    assert kinds([100, 101, 99, 100.5, 99.5]) == []
    assert kinds([100, 300]) == []  # too few repeats to judge


def test_spread_bimodal_and_drift_are_told_apart() -> None:
    assert kinds([100, 101, 99, 150, 151]) == ["spread", "bimodal"]
    assert kinds([100, 103, 106, 109, 112]) == ["drift"]  # 4% stdev, monotone
    assert kinds([100, 60, 140, 90, 110]) == ["spread"]
    # Monotone over 5 rounds: exact p = 2/120.
    rho, p = spearman_trend([5, 4, 3, 2, 1])
    assert rho == pytest.approx(-1.0) and p == pytest.approx(2 / 120)


def test_cell_warnings_watch_the_named_metrics_only() -> None:
    repeats = [{"ops_per_sec": v, "client_cpu_ns_per_op": 800.0, "other": v} for v in (1, 2, 9)]
    warned = cell_warnings(repeats, ["ops_per_sec", "client_cpu_ns_per_op"])
    assert list(warned) == ["ops_per_sec"]


def test_runs_record_and_tables_print_stability(tmp_path: Path) -> None:
    values = (1e5, 1.01e5, 2e5, 2.02e5, 1e5)
    repeats = [{"ops_per_sec": v, "client_cpu_ns_per_op": 800.0 + i} for i, v in enumerate(values)]
    record = RunRecord(tmp_path, Run.model_validate(run([cell("none", "steady", {}, [])])))
    for r in repeats:
        record.add_result(0, r)
    stability = record.run.cells[0].stability
    assert stability is not None and list(stability) == ["ops_per_sec", "client_cpu_ns_per_op"]
    doc = as_json(record.run)
    assert "bimodal" in " ".join(doc["cells"][0]["stability"]["ops_per_sec"])
    Run.model_validate(doc)  # an optional key: schema_version 2 still loads it
    notes = stability_notes(doc["cells"], {"ops_per_sec": "ops/s"})
    assert notes[0].startswith("unstable (none): ops/s spread") and "harness doctor" in notes[1]
    out = io.StringIO()
    print_run(record.run, Console(file=out, width=200, color_system=None))
    assert "unstable (none)" in out.getvalue()
