"""The plots a workload's describe asks for, drawn for any suite, and the labels its metrics
carry in the terminal table."""

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rundocs import cell, run

from harness.charts.run import write_plots
from harness.charts.workload import legend_label, series_medians
from harness.describe import parse_description
from harness.rundoc.model import Cell, RunDoc
from harness.tables import print_run

pytestmark = pytest.mark.unit

DESCRIBE: dict[str, Any] = {
    "suite": "queues",
    "strategies": [{"name": "mpsc"}, {"name": "ring"}],
    "default_scenario": "burst",
    "scenarios": [{"name": "burst"}, {"name": "idle"}],
    "metrics": [{"name": "ops_per_sec", "unit": "ops/s", "label": "items/s"}],
    "plots": [
        {"name": "delay", "chart": "cdf", "metrics": [{"name": "delay_hist"}]},
        {
            "name": "per-worker",
            "chart": "per_connection",
            "title": "items per worker",
            "metrics": [{"name": "taken", "label": "items taken"}],
        },
        {"name": "rate", "chart": "series", "metrics": [{"name": "rate_series"}]},
    ],
}


def repeat(ops: float, with_data: bool) -> dict[str, Any]:
    data = {
        "delay_hist": {"le_ns": [1_000, 50_000], "counts": [7, 3]},
        "taken": [9, 4, 1],
        "rate_series": [ops, ops * 1.1, ops * 0.9],
    }
    return {"ops_per_sec": ops, **(data if with_data else {})}


def test_the_described_plots_are_drawn_per_scenario_that_has_their_data(tmp_path: Path) -> None:
    specs = parse_description(DESCRIBE, "queues").plots
    cells = [
        cell(name, scenario, {}, [repeat(100.0, scenario == "burst")])
        for scenario in ("burst", "idle")
        for name in ("mpsc", "ring")
    ]
    plots = write_plots(tmp_path, [Cell.model_validate(c) for c in cells], specs)
    assert [(p.scenario, p.kind, p.path) for p in plots] == [
        ("burst", "delay", "plots/burst.delay.png"),
        ("burst", "per-worker", "plots/burst.per-worker.png"),
        ("burst", "rate", "plots/burst.rate.png"),
    ]
    for plot in plots:
        assert (tmp_path / plot.path).read_bytes().startswith(b"\x89PNG")


def test_a_declared_label_heads_the_metric_s_column() -> None:
    doc = run(
        [
            cell(name, "burst", {}, [repeat(ops, False)])
            for name, ops in (("mpsc", 1e3), ("ring", 2e3))
        ],
        metrics=DESCRIBE["metrics"],
    )
    out = io.StringIO()
    print_run(RunDoc.model_validate(doc), Console(file=out, width=200))
    assert "items/s" in out.getvalue()


def test_a_series_plot_takes_the_median_of_the_repeats_sample_by_sample() -> None:
    c = cell("mpsc", "burst", {}, [{"s": [1, 10]}, {"s": [3, 20, 7]}, {"s": [2]}])
    assert series_medians(Cell.model_validate(c), "s") == [2.0, 15.0, 7.0]


def test_a_legend_names_the_strategy_and_the_swept_params() -> None:
    swept = Cell.model_validate(cell("ring", "burst", {"shards": 2}, []))
    assert legend_label(swept.model_copy(update={"id": "burst/ring/shards=2"})) == "ring shards=2"
    assert legend_label(swept.model_copy(update={"id": "ring/shards=2"})) == "ring shards=2"
    assert legend_label(swept.model_copy(update={"id": "ring"})) == "ring"
