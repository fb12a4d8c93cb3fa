"""A suite's pages: the heat grid (its data drawn by grid.js), the compare view, the runs'
data, and a page per series: its chart (uPlot, drawn by chart.js) and its latest runs."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from harness.dashboard.bisecting import bisect_html
from harness.dashboard.context import Site
from harness.dashboard.data import Point, Series
from harness.dashboard.detectable import cell_figures, detectable_text
from harness.dashboard.markup import (
    SPARK_RUNS,
    e,
    figure,
    interval_html,
    page,
    params_text,
    script_json,
    series_label,
    short,
)
from harness.history.detection import noise_floor
from harness.history.importer import cell_key

# Rows of a series page's table of runs (each with its report and flame graphs: links).
TABLE_RUNS = 20


class SuitePages:
    """A suite's grid, compare view and runs' data, and its series' pages."""

    def __init__(self, site: Site) -> None:
        self.site = site

    def suite(self, key: tuple[int, str], members: list[Series]) -> None:
        machine_id, suite = key
        name = self.site.name(key)
        suite_runs = self.site.suite_runs[key]
        base_name = (suite_runs[-1].baseline if suite_runs else None) or ""
        by_cell = {
            (s.strategy, s.scenario, json.dumps(s.params, sort_keys=True), s.metric): s
            for s in members
        }
        metrics: dict[str, dict[str, Any]] = {}
        for s in members:
            metrics.setdefault(s.metric, {"name": s.metric, "unit": s.unit, "better": s.better})
        columns = sorted({(s.scenario, json.dumps(s.params, sort_keys=True)) for s in members})
        column_of = {c: i for i, c in enumerate(columns)}
        cells = []
        for s in members:
            if not s.points:
                continue
            params = json.dumps(s.params, sort_keys=True)
            # The strategy the latest run compared the cell with: its twin, or the baseline.
            base_strategy = s.compared_with.get(s.points[-1][0]) or base_name
            base = by_cell.get((base_strategy, s.scenario, params, s.metric))
            base_point = base.points[-1] if base is not None and base.points else None
            medians = np.array([pt[1] for pt in s.points])
            cells.append(
                {
                    "id": s.id,
                    "strategy": s.strategy,
                    "column": column_of[(s.scenario, params)],
                    "metric": s.metric,
                    "latest": s.points[-1][1],
                    "latest_text": figure(s, s.points[-1][1]),
                    "previous": s.points[-2][1] if len(s.points) > 1 else None,
                    "previous_within": len(s.points) > 1 and _within(s.points[-1], s.points[-2]),
                    "base": base_point[1] if base_point else None,
                    "base_strategy": base_strategy,
                    "base_within": base_point is not None and _within(s.points[-1], base_point),
                    # The run-to-run noise the detection judges this series by; a change
                    # within the two runs' own intervals is not coloured either.
                    "noise": noise_floor(medians, medians.size),
                    # A change since the previous run smaller than the series' minimum
                    # detectable change is not coloured: the detector would not flag it.
                    **cell_figures(self.site.h.detectable.get(s.id)),
                    "stale": bool(suite_runs) and s.points[-1][0] != suite_runs[-1].pk,
                    "spark": [round(pt[1], 6) for pt in s.points[-SPARK_RUNS:]],
                }
            )
        data = {
            "metrics": list(metrics.values()),
            "headline": _headline_metric(members),
            "baseline": base_name,
            "strategies": sorted({s.strategy for s in members}),
            "columns": [{"scenario": scn, "params": json.loads(p)} for scn, p in columns],
            "cells": cells,
        }
        self.site.write(f"data/{name}.js", f"window.SUITE = {script_json(data)};\n")
        runs_line = ""
        if suite_runs:
            last = suite_runs[-1]
            runs_line = f" · latest run {e(last.run_id)} ({e(short(last.commit))})"
            if len(suite_runs) > 1:
                before = suite_runs[-2]
                runs_line += f", previous {e(before.run_id)} ({e(short(before.commit))})"
        machine = self.site.machine_name(machine_id)
        body = (
            f"<p>machine <a href='machine-{machine_id}.html'>{e(machine)}"
            f"</a>{runs_line} · <a href='compare-{name}.html'>compare two runs</a></p>"
            "<form id='controls' class='controls'>"
            "<label>metric <select id='metric'></select></label>"
            "<label>colour by <select id='against'><option value='previous'>change since the "
            "previous run</option><option value='baseline'>ratio to the baseline "
            f"({e(base_name or 'none')}, or the strategy's twin)</option></select></label>"
            "<label>strategy <select id='f-strategy'></select></label>"
            "<label>scenario <select id='f-scenario'></select></label>"
            "<span id='f-params'></span></form>"
            "<p class='legend'>Each cell: the latest median, its change since the previous run "
            "and its ratio to the baseline (to its twin, named, for a strategy the suite "
            "compares with one), and the last runs' medians. "
            "<span class='tone worse'>worse</span> <span class='tone better'>better</span> "
            "<span class='tone moved'>moved (no direction)</span> "
            "<span class='tone same'>within its noise or the runs' intervals, or a change "
            "since the previous run smaller than its minimum detectable change before that "
            "run (<i>detects</i>: the step the history's detector flags the night it lands, "
            "in 80% of series with its noise and repeats)</span>: the deeper the colour, the "
            "more times its noise floor. "
            "Click a cell for its chart.</p>"
            "<table id='grid' class='grid'></table><p id='grid-empty' hidden>No cell matches "
            "the filters.</p>"
        )
        self.site.write(
            self.site.suite_page[key],
            page(suite, body, 0, (f"data/{name}.js", "dashboard.js", "grid.js")),
        )
        self.runs_data(key)
        self.compare(key, members)

    def runs_data(self, key: tuple[int, str]) -> None:
        """The suite's runs as its series pages' charts read them (links from series/)."""
        data = {
            "compare": f"../compare-{self.site.name(key)}.html",
            "runs": [
                {
                    "id": r.run_id,
                    "date": r.started_at,
                    "commit": short(r.commit),
                    "kernel": r.kernel or "",
                    "report": self.site.report_link(r, 1),
                }
                for r in self.site.suite_runs[key]
            ],
        }
        self.site.write(
            f"data/runs-{self.site.name(key)}.js", f"window.RUNS = {script_json(data)};\n"
        )

    def compare(self, key: tuple[int, str], members: list[Series]) -> None:
        suite_runs = self.site.suite_runs[key]
        index = {r.pk: i for i, r in enumerate(suite_runs)}
        data = {
            "runs": [r.run_id for r in suite_runs],
            "series": [
                {
                    "label": f"{s.strategy} {s.scenario} {params_text(s.params)} {s.metric}",
                    "unit": s.unit or "",
                    "better": s.better or "",
                    "values": _values(s, index, len(suite_runs)),
                }
                for s in members
            ],
        }
        name = self.site.name(key)
        self.site.write(f"data/compare-{name}.js", f"window.COMPARE = {script_json(data)};\n")
        body = (
            "<p>Pick two runs: B / A per series.</p><p>A <select id='run-a'></select> "
            "B <select id='run-b'></select></p><table id='compare'></table>"
        )
        self.site.write(
            f"compare-{name}.html",
            page(f"{key[1]}: compare runs", body, 0, (f"data/compare-{name}.js", "compare.js")),
        )

    # A series: its chart (uPlot, drawn by chart.js) and the table of its latest runs.

    def series_page(self, s: Series) -> None:
        key = (s.machine_id, s.suite)
        run_index = {r.pk: i for i, r in enumerate(self.site.suite_runs[key])}
        point_of = {pt[0]: i for i, pt in enumerate(s.points)}
        marks = []
        for change in self.site.changes_of[s.id]:
            at = point_of.get(self.site.pks[(change["fingerprint"], change["run_id"])])
            if at is None:
                continue
            marks.append(
                [
                    at,
                    change["kind"],
                    f"event {change['event']}: {change['kind']} {change['change']:+.1%} "
                    f"({change['method']}, {change['status']})",
                ]
            )
            marks.extend([at, "annotation", note] for note in change["annotations"])
        # A night without some probes: its figures are not to be compared as if it had them
        # (a probe's own figures are absent, and the workload ran without its overhead).
        for at, (pk, *_) in enumerate(s.points):
            run = self.site.h.runs[pk]
            if run.probes_missing:
                why = "; ".join(f"{name}: {reason}" for name, reason in run.probes_missing.items())
                marks.append([at, "annotation", f"{run.probes_note()} ({why})"])
        chart = {
            "label": series_label(s),
            "unit": s.unit or "",
            "better": s.better or "",
            "machine": self.site.machine_name(s.machine_id),
            "points": [[run_index[pk], m, lo, hi] for pk, m, lo, hi in s.points],
            "marks": marks,
        }
        rows = []
        cell = cell_key(s.strategy, s.scenario, s.params)
        for pk, median, low, high in s.points[-TABLE_RUNS:]:
            run = self.site.h.runs[pk]
            flames = " ".join(
                f'<a href="{e(self.site.run_link(run, path, 1))}">{e(kind)}</a>'
                for kind, file_cell, path in run.files
                if kind.endswith("flame") and file_cell == cell
            )
            rows.append(
                f"<tr><td><a href='{e(self.site.report_link(run, 1))}'>{e(run.run_id)}</a></td>"
                f"<td>{e(figure(s, median))}</td><td>{interval_html(s, low, high)}</td>"
                f"<td>{e(short(run.commit))}</td>"
                f"<td>{e(run.kernel or '')}</td><td>{flames}</td>"
                f"<td>{e(run.probes_note())}</td></tr>"
            )
        title = f"{s.suite} · {series_label(s)}"
        machine = self.site.machine_name(s.machine_id)
        body = (
            f"<p><a href='../{self.site.suite_page[key]}'>{e(s.suite)}</a> on "
            f"{e(machine)} · better: {e(s.better or 'no direction')} · "
            f"<a href='../compare-{self.site.name(key)}.html'>compare two runs</a></p>"
            f"<p class='detectable'>{e(detectable_text(self.site.h.detectable.get(s.id)))}</p>"
            f"<div class='chart-box'><div id='chart' data-series='{e(json.dumps(chart))}'></div>"
            "<div id='tip' class='tip' hidden></div></div>"
            "<p class='legend'>The median of each run with its 95% interval band; red lines: "
            "regressions, green: improvements, purple: changes without a direction, grey "
            "dashes: kernel or toolchain changes, and nights that lacked probes. Hover for a "
            "run's figures, drag to zoom "
            "(double-click or <button id='reset' type='button'>reset</button> to see all), "
            "click a run to pick it.</p><div id='picked' class='picked'></div>"
            f"<h2>The latest {min(TABLE_RUNS, len(s.points))} runs</h2>"
            "<table><tr><th>run</th><th>median</th><th>interval</th><th>commit</th>"
            f"<th>kernel</th><th>flame graphs</th><th>notes</th></tr>"
            f"{''.join(reversed(rows))}</table>{self.bisect_section(s)}"
        )
        scripts = ("uPlot.iife.min.js", f"data/runs-{self.site.name(key)}.js", "chart.js")
        self.site.write(f"series/{s.id}.html", page(title, body, 1, scripts, ("uPlot.min.css",)))

    def bisect_section(self, s: Series) -> str:
        """Each regression of the series: its bisection kept, else while open its command."""
        rows = []
        for change in self.site.changes_of[s.id]:
            pk = self.site.pks[(change["fingerprint"], change["run_id"])]
            found = self.site.bisect_range.get((pk, s.id))
            kept = (pk, s.id) in self.site.h.bisections
            if found is None or not (kept or change["status"] == "open"):
                continue
            commits = f"{short(found.good)}..{short(found.bad)}"
            rows.append(
                f"<tr><td>event {change['event']}</td><td>{e(change['run_id'])}<br><small>"
                f"{e(commits)}</small></td><td>{change['change']:+.1%}</td>"
                f"<td class='bisect'>{bisect_html(self.site, found, 1)}</td></tr>"
            )
        if not rows:
            return ""
        return (
            "<h2 id='bisect'>Bisecting its regressions</h2><p>Between the commit of the run "
            "before the change and that of the run it landed in.</p><table><tr><th>event</th>"
            "<th>run (commits)</th><th>change</th><th>bisect</th></tr>"
            f"{''.join(rows)}</table>"
        )


def _headline_metric(members: list[Series]) -> str:
    names = [s.metric for s in members]
    if "ops_per_sec" in names:
        return "ops_per_sec"
    return names[0] if names else ""


def _values(s: Series, index: dict[int, int], size: int) -> list[float | None]:
    values: list[float | None] = [None] * size
    for pk, median, _, _ in s.points:
        values[index[pk]] = median
    return values


def _within(a: Point, b: Point) -> bool:
    """Whether either point's median lies inside the other's 95% interval: a difference that
    the two runs' own spread does not support (two noisy runs on a 2-core VM, where the
    series has too few runs for its noise floor to say so)."""

    def inside(p: Point, q: Point) -> bool:
        return q[2] is not None and q[3] is not None and q[2] <= p[1] <= q[3]

    return inside(a, b) or inside(b, a)
