"""A run's charts, drawn into its directory once each:
- the workload's plots (workload.py), `plots/<scenario>.<plot name>.png`, drawn at the end of
  `harness run` and listed in run.json `plots`;
- the report's charts (report.py's `report_charts`), drawn by `harness report` (and at the
  end of every run) before report.html and summary.md are written, which show those whose
  files are there.
`<scenario>` is the scenario's name made safe for a file name (profiles.cells.slug).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.charts.report import draw_latency, draw_ratios, report_charts
from harness.charts.workload import CHARTS, PlotSpec
from harness.format.cells import by_scenario, varying_params
from harness.format.metrics import CPU_METRICS, ratio_metric, report_columns, report_labels
from harness.probes import registry
from harness.profiles.cells import slug
from harness.rundoc.model import Cell, Plot


def write_plots(run_dir: Path, cells: Sequence[Cell], specs: Sequence[PlotSpec]) -> list[Plot]:
    """Draw the workload's plots that the run's cells support; returns run.json's `plots`."""
    plots: list[Plot] = []
    for scenario in dict.fromkeys(cell.scenario for cell in cells):
        group = [cell for cell in cells if cell.scenario == scenario]
        for spec in specs:
            path = run_dir / "plots" / f"{slug(scenario)}.{spec.name}.png"
            if CHARTS[spec.chart].draw(scenario, spec, group, path):
                where = str(path.relative_to(run_dir))
                plots.append(Plot(scenario=scenario, kind=spec.name, path=where))
    return plots


def ratio_metrics(doc: Mapping[str, Any], comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """The headline metric, then the CPU-per-op metrics the comparisons have ratios for."""
    columns, _ = report_columns(doc, list(doc.get("cells") or []), registry.labels())
    headline = ratio_metric(doc, columns)
    with_ratio = {str(e.get("metric")) for e in comparisons if e.get("ratio") is not None}
    names = [headline] if headline in with_ratio else []
    return names + [m for m in CPU_METRICS if m in with_ratio and m not in names]


def write_charts(doc: Mapping[str, Any], run_dir: Path) -> None:
    """Draw every chart of `report_charts` into `<run_dir>/charts/`; one with nothing to draw
    leaves no file (not one of an earlier drawing either)."""
    cells = list(doc.get("cells") or [])
    baseline = str((doc.get("config") or {}).get("baseline"))
    labels = report_labels(doc, registry.labels())
    comparisons = list(doc["comparisons"])
    metrics = ratio_metrics(doc, comparisons)
    groups = by_scenario(cells)
    for chart in report_charts(doc):
        group = groups[chart.scenario]
        varying = varying_params(group)
        path = run_dir / chart.path
        if chart.kind == "ratios":
            entries = [e for e in comparisons if str(e.get("scenario")) == chart.scenario]
            drawn = draw_ratios(chart.scenario, entries, metrics, labels, baseline, varying, path)
        else:
            drawn = draw_latency(chart.scenario, group, varying, path)
        if not drawn:
            path.unlink(missing_ok=True)
            (run_dir / chart.vector).unlink(missing_ok=True)
