"""Writing the dashboard: plain HTML pages, a stylesheet, scripts and their data as
<script> files (no fetch, no inline script), and uPlot (vendored, MIT) for the charts, so
that it opens from file:// with no network. Every name from the history is HTML-escaped on
the server and set as text by the scripts."""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection

from harness.dashboard.data import History, Run, Series, load
from harness.history.detection import noise_floor
from harness.history.importer import cell_key

ASSETS = Path(__file__).resolve().parent / "assets"
# Copied into the site as they are: the site's own scripts and uPlot 1.6.32 with its licence.
ASSET_FILES = (
    "style.css",
    "dashboard.js",
    "grid.js",
    "chart.js",
    "compare.js",
    "uPlot.iife.min.js",
    "uPlot.min.css",
    "uPlot.LICENSE",
)
# Rows of a series page's table of runs (each with its report and flame graphs: links).
TABLE_RUNS = 20
# Change points listed on the overview; the rest are counted (harness history regressions).
TRIAGE_ROWS = 30
# Rows of the overview's missing-cells table.
MISSING_ROWS = 15
# Runs a sparkline shows.
SPARK_RUNS = 60


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def params_text(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")


def page(
    title: str,
    body: str,
    depth: int = 0,
    scripts: tuple[str, ...] = (),
    styles: tuple[str, ...] = (),
) -> str:
    up = "../" * depth
    tags = "".join(f'<script src="{e(up + s)}"></script>' for s in scripts)
    links = "".join(f'<link rel="stylesheet" href="{e(up + s)}">' for s in styles)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title>"
        f'<link rel="stylesheet" href="{up}style.css">{links}</head><body>'
        f'<nav><a href="{up}index.html">overview</a></nav><h1>{e(title)}</h1>'
        f"{body}{tags}</body></html>"
    )


def short(commit: str | None) -> str:
    return (commit or "?")[:10]


def series_label(s: Series) -> str:
    return f"{s.strategy} · {s.scenario} · {params_text(s.params)} · {s.metric}"


class Site:
    def __init__(self, history: History, out: Path) -> None:
        self.h = history
        self.out = out
        self.pages = 0
        self._run_dirs: dict[tuple[int, int], str] = {}
        self._changes_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for change in history.changes:
            self._changes_of[change["series_id"]].append(change)
        self._pks = {run.run_id: pk for pk, run in history.runs.items()}
        suites = sorted({(s.machine_id, s.suite) for s in history.series.values()})
        suites += sorted({(r.machine_id, r.suite) for r in history.runs.values()} - set(suites))
        self.suite_page = {key: f"suite-{i + 1}.html" for i, key in enumerate(sorted(suites))}
        self.suite_runs: dict[tuple[int, str], list[Run]] = defaultdict(list)
        for run in history.runs.values():
            self.suite_runs[(run.machine_id, run.suite)].append(run)

    def write(self, rel: str, html: str) -> None:
        replace_file(self.out / rel, html.encode("utf-8"))
        self.pages += 1

    def run_link(self, run: Run, rel: str | None, depth: int) -> str | None:
        """The link from a page `depth` folders down the site to `rel` in the run's folder."""
        if rel is None:
            return None
        key = (run.pk, depth)
        if key not in self._run_dirs:
            folder = os.path.relpath(run.run_dir, self.out / ("x/" * depth))
            self._run_dirs[key] = folder.replace(os.sep, "/")
        return f"{self._run_dirs[key]}/{rel}"

    def report_link(self, run: Run, depth: int) -> str:
        """The run's report.html, else its run.json."""
        link = self.run_link(run, run.report or "run.json", depth)
        assert link is not None
        return link

    def machine_name(self, machine_id: int) -> str:
        machine = self.h.machines[machine_id]
        return f"{machine['hostname'] or '?'} ({machine['fingerprint'][:8]})"

    def name(self, key: tuple[int, str]) -> str:
        return self.suite_page[key].removesuffix(".html")

    # The overview: what changed first, then the machines and the latest runs.

    def overview(self) -> None:
        latest: dict[tuple[int, str], Run] = {}
        for run in self.h.runs.values():
            latest[(run.machine_id, run.suite)] = run
        body = [
            self.triage(),
            self.machines_table(),
            self.latest_table(latest),
            self.missing_table(latest),
        ]
        self.write(
            "index.html",
            page("Benchmark history", "".join(body), 0, ("dashboard.js",)),
        )

    def triage(self) -> str:
        changes = self.h.changes
        open_ = [c for c in changes if c["status"] == "open"]
        counts = ", ".join(
            f"{sum(c['kind'] == kind for c in open_)} {kind}s"
            for kind in ("regression", "improvement", "change")
        )
        summary = (
            f"<p class='summary'>Open: {counts} (in "
            f"{len({c['event'] for c in open_})} events); "
            f"{len(changes) - len(open_)} acknowledged. Largest over noise first; "
            "acknowledge an event with <code>harness history ack EVENT --reason TEXT</code>."
        )
        if len(changes) > TRIAGE_ROWS:
            summary += (
                f" The first {TRIAGE_ROWS} of {len(changes)} are shown: "
                "<code>harness history regressions --json</code> lists them all."
            )
        if not changes:
            return "<h2>What changed</h2><p>No change points: nothing moved beyond its noise.</p>"
        rows = [self.change_row(c) for c in changes[:TRIAGE_ROWS]]
        return (
            f"<h2>What changed</h2>{summary}</p><table class='triage'><tr><th>change</th>"
            "<th>series</th><th>size</th><th>before &rarr; after (interval)</th>"
            "<th>landed in run (commits)</th><th>trend</th><th>state</th></tr>"
            + "".join(rows)
            + "</table>"
        )

    def change_row(self, c: dict[str, Any]) -> str:
        s = self.h.series[c["series_id"]]
        pk = self._pks[c["run_id"]]
        run = self.h.runs[pk]
        at = next((i for i, pt in enumerate(s.points) if pt[0] == pk), None)
        interval, before_commit, spark = "", "?", ""
        if at is not None:
            _, _, low, high = s.points[at]
            if low is not None and high is not None:
                interval = f" ({low:.4g}&ndash;{high:.4g})"
            if at > 0:
                before_commit = short(self.h.runs[s.points[at - 1][0]].git_commit)
            start = max(0, at - SPARK_RUNS // 2)
            window = [pt[1] for pt in s.points[start : start + SPARK_RUNS]]
            spark = (
                f"<svg class='spark' width='120' height='28' data-mark='{at - start}' "
                f"data-values='{e(json.dumps([round(v, 6) for v in window]))}'></svg>"
            )
        unit = f" {e(s.unit)}" if s.unit else ""
        state = c["status"] + (f": {c['reason']}" if c["reason"] else "")
        notes = "".join(f"<br><small>{e(note)}</small>" for note in c["annotations"])
        return (
            f"<tr class='{e(c['status'])} {e(c['kind'])}'><td class='kind'>{e(c['kind'])}</td>"
            f"<td><a href='series/{s.id}.html'>{e(s.suite)} · {e(series_label(s))}</a>"
            f"<br><small>{e(self.machine_name(s.machine_id))}</small></td>"
            f"<td class='size'>{c['change']:+.1%}<br><small>{abs(c['change']) / c['noise']:.1f}"
            f"&times; noise ({c['noise']:.1%}), {e(c['method'])}</small></td>"
            f"<td>{c['before']:.4g} &rarr; {c['after']:.4g}{unit}{interval}</td>"
            f"<td><a href='{e(self.report_link(run, 0))}'>{e(run.run_id)}</a><br><small>"
            f"{e(before_commit)}..{e(short(run.git_commit))}</small>{notes}</td>"
            f"<td>{spark}</td><td>event {c['event']}: {e(state)}</td></tr>"
        )

    def machines_table(self) -> str:
        rows = []
        for machine_id in sorted(self.h.machines):
            mine = [r for r in self.h.runs.values() if r.machine_id == machine_id]
            last = mine[-1].started_at if mine else "-"
            rows.append(
                f"<tr><td><a href='machine-{machine_id}.html'>"
                f"{e(self.machine_name(machine_id))}</a></td><td>{len(mine)}</td>"
                f"<td>{e(last)}</td></tr>"
            )
        return (
            "<h2>Machines</h2><table><tr><th>machine</th><th>runs</th><th>latest</th></tr>"
            + "".join(rows)
            + "</table>"
        )

    def latest_table(self, latest: dict[tuple[int, str], Run]) -> str:
        rows = []
        for (machine_id, suite), run in sorted(latest.items()):
            report = self.run_link(run, run.report, 0)
            link = f'<a href="{e(report)}">report</a>' if report else ""
            rows.append(
                f'<tr><td><a href="{self.suite_page[(machine_id, suite)]}">{e(suite)}</a></td>'
                f"<td>{e(self.machine_name(machine_id))}</td><td>{e(run.run_id)}</td>"
                f"<td>{e(short(run.git_commit))}</td>"
                f"<td class='{e(run.status)}'>{e(run.status)}</td><td>{link}</td></tr>"
            )
        return (
            "<h2>Latest runs</h2><table><tr><th>suite</th><th>machine</th><th>run</th>"
            "<th>commit</th><th>status</th><th></th></tr>" + "".join(rows) + "</table>"
        )

    def missing_table(self, latest: dict[tuple[int, str], Run]) -> str:
        rows = []
        for (machine_id, suite), run in sorted(latest.items()):
            if run.status != "complete":
                rows.append(
                    f"<tr><td>{e(suite)}</td><td>{e(run.run_id)}</td>"
                    f"<td>run {e(run.status)}</td></tr>"
                )
            for s in self.h.series.values():
                same = (s.machine_id, s.suite) == (machine_id, suite)
                if same and s.points and s.points[-1][0] != run.pk:
                    rows.append(
                        f"<tr><td>{e(suite)}</td><td>{e(run.run_id)}</td><td>"
                        f'<a href="series/{s.id}.html">{e(series_label(s))}</a> missing</td></tr>'
                    )
        if not rows:
            return "<h2>Missing or failed cells</h2><p>None in the latest runs.</p>"
        more = f"<p>and {len(rows) - MISSING_ROWS} more.</p>" if len(rows) > MISSING_ROWS else ""
        return (
            "<h2>Missing or failed cells</h2><table><tr><th>suite</th><th>run</th><th></th></tr>"
            + "".join(rows[:MISSING_ROWS])
            + f"</table>{more}"
        )

    # A suite: the heat grid (its data drawn by grid.js), the compare view, the runs' data.

    def suite(self, key: tuple[int, str], members: list[Series]) -> None:
        machine_id, suite = key
        name = self.name(key)
        suite_runs = self.suite_runs[key]
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
            base = by_cell.get((base_name, s.scenario, params, s.metric))
            medians = np.array([pt[1] for pt in s.points])
            cells.append(
                {
                    "id": s.id,
                    "strategy": s.strategy,
                    "column": column_of[(s.scenario, params)],
                    "metric": s.metric,
                    "latest": s.points[-1][1],
                    "previous": s.points[-2][1] if len(s.points) > 1 else None,
                    "base": base.points[-1][1] if base is not None and base.points else None,
                    # The run-to-run noise the detection judges this series by.
                    "noise": noise_floor(medians, medians.size),
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
        self.write(f"data/{name}.js", f"window.SUITE = {script_json(data)};\n")
        runs_line = ""
        if suite_runs:
            last = suite_runs[-1]
            runs_line = f" · latest run {e(last.run_id)} ({e(short(last.git_commit))})"
            if len(suite_runs) > 1:
                before = suite_runs[-2]
                runs_line += f", previous {e(before.run_id)} ({e(short(before.git_commit))})"
        body = (
            f"<p>machine <a href='machine-{machine_id}.html'>{e(self.machine_name(machine_id))}"
            f"</a>{runs_line} · <a href='compare-{name}.html'>compare two runs</a></p>"
            "<form id='controls' class='controls'>"
            "<label>metric <select id='metric'></select></label>"
            "<label>colour by <select id='against'><option value='previous'>change since the "
            "previous run</option><option value='baseline'>ratio to the baseline "
            f"({e(base_name or 'none')})</option></select></label>"
            "<label>strategy <select id='f-strategy'></select></label>"
            "<label>scenario <select id='f-scenario'></select></label>"
            "<span id='f-params'></span></form>"
            "<p class='legend'>Each cell: the latest median, its change since the previous run "
            "and its ratio to the baseline, and the last runs' medians. "
            "<span class='tone worse'>worse</span> <span class='tone better'>better</span> "
            "<span class='tone moved'>moved (no direction)</span> "
            "<span class='tone same'>within its noise</span>: the deeper the colour, the more "
            "times its noise floor. Click a cell for its chart.</p>"
            "<table id='grid' class='grid'></table><p id='grid-empty' hidden>No cell matches "
            "the filters.</p>"
        )
        self.write(
            self.suite_page[key],
            page(suite, body, 0, (f"data/{name}.js", "dashboard.js", "grid.js")),
        )
        self.runs_data(key)
        self.compare(key, members)

    def runs_data(self, key: tuple[int, str]) -> None:
        """The suite's runs as its series pages' charts read them (links from series/)."""
        data = {
            "compare": f"../compare-{self.name(key)}.html",
            "runs": [
                {
                    "id": r.run_id,
                    "date": r.started_at,
                    "commit": short(r.git_commit),
                    "kernel": r.kernel or "",
                    "report": self.report_link(r, 1),
                }
                for r in self.suite_runs[key]
            ],
        }
        self.write(f"data/runs-{self.name(key)}.js", f"window.RUNS = {script_json(data)};\n")

    def compare(self, key: tuple[int, str], members: list[Series]) -> None:
        suite_runs = self.suite_runs[key]
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
        name = self.name(key)
        self.write(f"data/compare-{name}.js", f"window.COMPARE = {script_json(data)};\n")
        body = (
            "<p>Pick two runs: B / A per series.</p><p>A <select id='run-a'></select> "
            "B <select id='run-b'></select></p><table id='compare'></table>"
        )
        self.write(
            f"compare-{name}.html",
            page(f"{key[1]}: compare runs", body, 0, (f"data/compare-{name}.js", "compare.js")),
        )

    # A series: its chart (uPlot, drawn by chart.js) and the table of its latest runs.

    def series_page(self, s: Series) -> None:
        key = (s.machine_id, s.suite)
        run_index = {r.pk: i for i, r in enumerate(self.suite_runs[key])}
        point_of = {pt[0]: i for i, pt in enumerate(s.points)}
        marks = []
        for change in self._changes_of[s.id]:
            at = point_of.get(self._pks[change["run_id"]])
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
        chart = {
            "label": series_label(s),
            "unit": s.unit or "",
            "better": s.better or "",
            "machine": self.machine_name(s.machine_id),
            "points": [[run_index[pk], m, lo, hi] for pk, m, lo, hi in s.points],
            "marks": marks,
        }
        rows = []
        cell = cell_key(s.strategy, s.scenario, s.params)
        for pk, median, low, high in s.points[-TABLE_RUNS:]:
            run = self.h.runs[pk]
            flames = " ".join(
                f'<a href="{e(self.run_link(run, path, 1))}">{e(kind)}</a>'
                for kind, file_cell, path in run.files
                if kind.endswith("flame") and file_cell == cell
            )
            interval = f"{low:.4g}&ndash;{high:.4g}" if low is not None and high is not None else ""
            rows.append(
                f"<tr><td><a href='{e(self.report_link(run, 1))}'>{e(run.run_id)}</a></td>"
                f"<td>{median:.4g}</td><td>{interval}</td><td>{e(short(run.git_commit))}</td>"
                f"<td>{e(run.kernel or '')}</td><td>{flames}</td></tr>"
            )
        title = f"{s.suite} · {series_label(s)}"
        body = (
            f"<p><a href='../{self.suite_page[key]}'>{e(s.suite)}</a> on "
            f"{e(self.machine_name(s.machine_id))} · better: {e(s.better or 'no direction')} · "
            f"<a href='../compare-{self.name(key)}.html'>compare two runs</a></p>"
            f"<div class='chart-box'><div id='chart' data-series='{e(json.dumps(chart))}'></div>"
            "<div id='tip' class='tip' hidden></div></div>"
            "<p class='legend'>The median of each run with its 95% interval band; red lines: "
            "regressions, green: improvements, purple: changes without a direction, grey "
            "dashes: kernel or toolchain changes. Hover for a run's figures, drag to zoom "
            "(double-click or <button id='reset' type='button'>reset</button> to see all), "
            "click a run to pick it.</p><div id='picked' class='picked'></div>"
            f"<h2>The latest {min(TABLE_RUNS, len(s.points))} runs</h2>"
            "<table><tr><th>run</th><th>median</th><th>interval</th><th>commit</th>"
            f"<th>kernel</th><th>flame graphs</th></tr>{''.join(reversed(rows))}</table>"
        )
        scripts = ("uPlot.iife.min.js", f"data/runs-{self.name(key)}.js", "chart.js")
        self.write(f"series/{s.id}.html", page(title, body, 1, scripts, ("uPlot.min.css",)))

    def machine(self, machine_id: int) -> None:
        keys = json.loads(self.h.machines[machine_id]["keys"])
        facts = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in keys.items())
        rows = "".join(
            f"<tr><td>{e(r.run_id)}</td><td>{e(r.suite)}</td><td>{e(r.status)}</td>"
            f"<td>{e(r.kernel or '')}</td><td>{e(short(r.git_commit))}</td></tr>"
            for r in reversed(list(self.h.runs.values()))
            if r.machine_id == machine_id
        )
        body = (
            f"<p>fingerprint {e(self.h.machines[machine_id]['fingerprint'])} (sha256 of:)</p>"
            f"<table>{facts}</table>{self.siblings(machine_id, keys)}"
            "<h2>Runs</h2><table><tr><th>run</th><th>suite</th>"
            f"<th>status</th><th>kernel</th><th>commit</th></tr>{rows}</table>"
        )
        self.write(f"machine-{machine_id}.html", page(self.machine_name(machine_id), body))

    def siblings(self, machine_id: int, keys: dict[str, Any]) -> str:
        """Other machines of the same hostname (a new CPU, more memory, another governor):
        what differs, since their series are not compared with this one's."""
        items = []
        for other_id, other in self.h.machines.items():
            if other_id == machine_id or other["hostname"] != keys.get("hostname"):
                continue
            theirs = json.loads(other["keys"])
            changed = ", ".join(
                f"{k}: {theirs.get(k)} here {keys.get(k)}"
                for k in sorted(set(keys) | set(theirs))
                if theirs.get(k) != keys.get(k)
            )
            items.append(
                f'<li><a href="machine-{other_id}.html">{e(self.machine_name(other_id))}</a>: '
                f"{e(changed)}</li>"
            )
        if not items:
            return ""
        return (
            "<h2>Same hostname, another machine</h2><p>Their series are separate: what "
            f"differs from this one:</p><ul>{''.join(items)}</ul>"
        )

    def build(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        for folder in ("series", "data"):
            real_folder(self.out / folder)
        for asset in ASSET_FILES:
            replace_file(self.out / asset, (ASSETS / asset).read_bytes())
        self.overview()
        grouped: dict[tuple[int, str], list[Series]] = defaultdict(list)
        for s in self.h.series.values():
            grouped[(s.machine_id, s.suite)].append(s)
        for key in self.suite_page:
            self.suite(key, grouped.get(key, []))
        for s in self.h.series.values():
            self.series_page(s)
        for machine_id in self.h.machines:
            self.machine(machine_id)
        return self.pages


def real_folder(path: Path) -> None:
    """`path` as a folder of its own: a symbolic link of that name (to anywhere) is removed,
    not followed, so that no page is written outside the site."""
    if path.is_symlink():
        path.unlink()
    path.mkdir(exist_ok=True)


def replace_file(path: Path, content: bytes) -> None:
    """Write `path` whole or not at all: a temporary file in its folder renamed over it, so
    that a link of that name is replaced, never written through."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the site from a web server
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


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


def build_site(conn: Connection, out: Path) -> int:
    """Write the whole site under `out`; the number of files written."""
    return Site(load(conn), out).build()
