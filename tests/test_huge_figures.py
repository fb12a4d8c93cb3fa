"""Figures near a double's largest value (issue 32, item 5): finite repeats give finite
medians, intervals, ratios and stability notes, and the harness never writes a run.json that it
then refuses to read."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, run_harness, runs_dir
from rundocs import cell, run

from harness.base.writes import WriteFailed
from harness.run.recorder import RunRecord
from harness.rundoc import jsonfile
from harness.rundoc.model import RunDoc, Summary
from harness.stability import warnings_for
from harness.stats import compare_samples, median, summarize_values

pytestmark = pytest.mark.unit

ODDNAMES = FIXTURES / "odd-suites" / "oddnames"  # reports its `ops` parameter as ops/s
LARGEST = sys.float_info.max
HUGE = [1e308, 1e308, 1.5e308, 1.2e308, 1.7e308]


@pytest.mark.parametrize(
    "values", [[1e308, 1e308], [LARGEST, LARGEST], HUGE[:4], [-LARGEST, LARGEST]]
)
def test_medians_of_huge_finite_figures_are_finite(values: list[float]) -> None:
    summary = summarize_values(values)
    assert all(math.isfinite(summary[key]) for key in ("median", "ci95_low", "ci95_high"))
    assert summary["median"] == float(np.median(np.array(values) / 2) * 2)


def test_the_median_is_numpys_where_numpy_does_not_overflow() -> None:
    rng = np.random.default_rng(32)
    for size in (1, 2, 5, 6):
        values = list(rng.lognormal(10, 3, size))
        assert median(values) == float(np.median(values))


def test_ratios_of_huge_figures_and_their_intervals_are_finite() -> None:
    # Even counts: each median is the midpoint of two middle values (numpy's sum overflowed).
    out = compare_samples([1e308] * 4, [1.7e308] * 3 + [LARGEST], "higher")
    assert out["ratio"] == pytest.approx(1.7 / 1.0)
    assert math.isfinite(out["ci95_low"]) and math.isfinite(out["ci95_high"])
    assert out["verdict"] == "better"


def test_a_ratio_beyond_a_double_is_missing_with_its_reason() -> None:
    out = compare_samples([1e-10] * 5, [1e308] * 5, "higher")
    assert out["ratio"] is None and out["ci95_low"] is None
    assert "beyond a double's range" in out["reason"]
    assert out["verdict"] == "better"  # the direction holds without a ratio


def test_stability_notes_of_huge_figures() -> None:
    assert warnings_for([LARGEST] * 5) == []
    found = warnings_for([1e308, 1e308, 1e308, 1.7e308, 1.7e308])
    assert found[0].startswith("spread: stdev is 3")
    assert "bimodal: 3 repeats near 1e+308, 2 near 1.7e+308" in found


def test_a_run_of_huge_figures_ends_complete_with_its_report(
    harness_env: dict[str, str],
) -> None:
    args = ["run", str(ODDNAMES), "--strategies", "plain", "--repeat", "3"]
    args += ["--param", "ops=1e308", "--param", f"ops={LARGEST!r}"]
    done = run_harness([*args, "--duration-s", "0.1", "--warmup-s", "0"], harness_env)
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(harness_env).iterdir()
    doc = jsonfile.load_run(run_dir)
    assert doc.status == "complete"
    medians = [c.summary["ops_per_sec"].median for c in doc.cells]
    assert medians == [1e308, LARGEST]
    assert (run_dir / "summary.md").is_file() and (run_dir / "report.html").is_file()
    assert "1e308" in done.stdout and "1.8e308" in done.stdout  # the table's figures
    assert "overflow" not in done.stderr


def test_a_figure_run_json_cannot_hold_fails_the_run_in_one_line(tmp_path: Path) -> None:
    """Whatever computes an infinite figure, run.json is not written with it (as null, which
    the harness would refuse): the run ends failed, saying where, in the run as last written."""
    record = RunRecord(tmp_path, RunDoc.model_validate(run([cell("none", "steady", {}, [])])))
    record.add_result(0, {"ops_per_sec": 1000.0})
    record.write()
    figures = {"median": math.inf, "min": 1.0, "max": 1.0, "ci95_low": 1.0, "ci95_high": 1.0}
    record.cell(0).summary["ops_per_sec"] = Summary(**figures, ci_coverage=0.0, n=1)
    with pytest.raises(WriteFailed) as raised:
        record.write()
    message = str(raised.value)
    assert "\n" not in message
    assert "cells.0.summary.ops_per_sec.median" in message and "infinite figure" in message
    assert jsonfile.load_run(tmp_path).cells[0].summary["ops_per_sec"].median == 1000.0
    assert record.fail(message)
    failed = jsonfile.load_run(tmp_path)
    assert failed.status == "failed" and failed.error == message
    assert json.loads((tmp_path / "run.json").read_text())["cells"][0]["repeats"] == [
        {"ops_per_sec": 1000.0}
    ]
