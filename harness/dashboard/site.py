"""Writing the dashboard: plain HTML pages with inline SVG charts, a stylesheet, and for the
compare view a script and its data as <script> files, so that it opens from file:// with no
network. Every name from the history is HTML-escaped."""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from harness.dashboard import svg
from harness.dashboard.data import History, Run, Series, load
from harness.history.importer import cell_key

ASSETS = Path(__file__).resolve().parent / "assets"
# Rows of a series page's table of runs.
TABLE_RUNS = 30


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def params_text(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "-"


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")


def page(title: str, body: str, depth: int = 0, scripts: tuple[str, ...] = ()) -> str:
    up = "../" * depth
    tags = "".join(f'<script src="{e(up + s)}"></script>' for s in scripts)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)}</title>"
        f'<link rel="stylesheet" href="{up}style.css"></head><body>'
        f'<nav><a href="{up}index.html">overview</a></nav><h1>{e(title)}</h1>'
        f"{body}{tags}</body></html>"
    )


class Site:
    def __init__(self, history: History, out: Path) -> None:
        self.h = history
        self.out = out
        self.pages = 0
        self._run_dirs: dict[tuple[int, int], str] = {}
        self._reports: dict[int, str] = {}
        self._changes_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for change in history.changes:
            self._changes_of[change["series_id"]].append(change)
        suites = sorted({(s.machine_id, s.suite) for s in history.series.values()})
        suites += sorted({(r.machine_id, r.suite) for r in history.runs.values()} - set(suites))
        self.suite_page = {key: f"suite-{i + 1}.html" for i, key in enumerate(sorted(suites))}

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

    def machine_name(self, machine_id: int) -> str:
        machine = self.h.machines[machine_id]
        return f"{machine['hostname'] or '?'} ({machine['fingerprint'][:8]})"

    # Pages

    def overview(self) -> None:
        latest: dict[tuple[int, str], Run] = {}
        for run in self.h.runs.values():
            latest[(run.machine_id, run.suite)] = run
        rows = []
        for (machine_id, suite), run in sorted(latest.items()):
            report = self.run_link(run, run.report, 0)
            link = f'<a href="{e(report)}">report</a>' if report else ""
            rows.append(
                f'<tr><td><a href="{self.suite_page[(machine_id, suite)]}">{e(suite)}</a></td>'
                f'<td><a href="machine-{machine_id}.html">{e(self.machine_name(machine_id))}</a>'
                f"</td><td>{e(run.run_id)}</td><td class='{e(run.status)}'>{e(run.status)}</td>"
                f"<td>{link}</td></tr>"
            )
        body = [
            "<h2>Latest runs</h2><table><tr><th>suite</th><th>machine</th><th>run</th>"
            "<th>status</th><th></th></tr>",
            *rows,
            "</table>",
            self.events_table(),
            self.missing_table(latest),
        ]
        self.write("index.html", page("Benchmark history", "".join(body)))

    def events_table(self) -> str:
        by_event: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for change in self.h.changes:
            by_event[change["event"]].append(change)
        ranked = sorted(
            by_event.items(),
            key=lambda item: (item[1][0]["status"] != "open", -item[1][0]["score"]),
        )
        rows = []
        for event_id, changes in ranked:
            first = changes[0]
            worse = [c for c in changes if c["kind"] == "regression"]
            top = max(changes, key=lambda c: abs(c["change"]) / c["noise"])
            notes = "; ".join(first["annotations"])
            status = first["status"] + (f": {first['reason']}" if first["reason"] else "")
            rows.append(
                f"<tr class='{e(first['status'])}'><td>{event_id}</td><td>{e(first['run_id'])}"
                f"</td><td>{e(first['suite'])}</td><td>{e(first['machine'])}</td>"
                f"<td>{first['score']:.1f}</td><td>{len(worse)} of {len(changes)}</td>"
                f'<td><a href="series/{top["series_id"]}.html">{e(top["strategy"])} '
                f"{e(params_text(top['params']))} {e(top['metric'])}</a> {top['change']:+.1%}</td>"
                f"<td>{e(notes)}</td><td>{e(status)}</td></tr>"
            )
        if not rows:
            return "<h2>Events to triage</h2><p>No change points.</p>"
        return (
            "<h2>Events to triage</h2><p>Change points of one run grouped, ranked by size over "
            "noise; acknowledge with <code>harness history ack ID --reason TEXT</code>.</p>"
            "<table><tr><th>event</th><th>run</th><th>suite</th><th>machine</th><th>score</th>"
            "<th>regressions</th><th>largest</th><th>annotations</th><th>status</th></tr>"
            + "".join(rows)
            + "</table>"
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
                        f'<a href="series/{s.id}.html">{e(s.strategy)} '
                        f"{e(params_text(s.params))} {e(s.metric)}</a> missing</td></tr>"
                    )
        if not rows:
            return "<h2>Missing or failed cells</h2><p>None in the latest runs.</p>"
        return (
            "<h2>Missing or failed cells</h2><table><tr><th>suite</th><th>run</th><th></th></tr>"
            + "".join(rows[:500])
            + "</table>"
        )

    def suite(self, machine_id: int, suite: str, members: list[Series]) -> None:
        headline = _headline_metric(members)
        grid = [s for s in members if s.metric == headline]
        strategies = sorted({s.strategy for s in grid})
        columns = sorted({(s.scenario, json.dumps(s.params, sort_keys=True)) for s in grid})
        cell = {(s.strategy, s.scenario, json.dumps(s.params, sort_keys=True)): s for s in grid}
        suite_runs = [
            r for r in self.h.runs.values() if (r.machine_id, r.suite) == (machine_id, suite)
        ]
        base_name = (suite_runs[-1].baseline if suite_runs else None) or ""
        head = "".join(
            f"<th>{e(scn)}<br>{e(params_text(json.loads(p)))}</th>" for scn, p in columns
        )
        rows = []
        for strategy in strategies:
            tds = []
            for scn, p in columns:
                s = cell.get((strategy, scn, p))
                base = cell.get((base_name, scn, p))
                if s is None or not s.points:
                    tds.append("<td>-</td>")
                    continue
                ratio = ""
                if base is not None and base.points and base.points[-1][1]:
                    ratio = f"{s.points[-1][1] / base.points[-1][1]:.2f}&times;"
                spark = svg.sparkline([pt[1] for pt in s.points])
                tds.append(f'<td><a href="series/{s.id}.html">{ratio}<br>{spark}</a></td>')
            rows.append(f"<tr><th>{e(strategy)}</th>{''.join(tds)}</tr>")
        others = "".join(
            f'<li><a href="series/{s.id}.html">{e(s.strategy)} {e(s.scenario)} '
            f"{e(params_text(s.params))} {e(s.metric)}</a></li>"
            for s in members
            if s.metric != headline
        )
        body = (
            f"<p>machine <a href='machine-{machine_id}.html'>{e(self.machine_name(machine_id))}"
            f"</a> · metric {e(headline)} · ratio of the latest median to {e(base_name)}'s · "
            f"<a href='compare-{self.suite_page[(machine_id, suite)]}'>compare two runs</a></p>"
            f"<table class='grid'><tr><th>strategy</th>{head}</tr>{''.join(rows)}</table>"
            + (f"<h2>Other series</h2><ul>{others}</ul>" if others else "")
        )
        self.write(self.suite_page[(machine_id, suite)], page(f"{suite}", body))
        self.compare(machine_id, suite, members)

    def compare(self, machine_id: int, suite: str, members: list[Series]) -> None:
        suite_runs = [
            r for r in self.h.runs.values() if (r.machine_id, r.suite) == (machine_id, suite)
        ]
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
        name = self.suite_page[(machine_id, suite)].removesuffix(".html")
        self.write(f"data/compare-{name}.js", f"window.COMPARE = {script_json(data)};\n")
        body = (
            "<p>Pick two runs: B / A per series.</p><p>A <select id='run-a'></select> "
            "B <select id='run-b'></select></p><table id='compare'></table>"
        )
        self.write(
            f"compare-{name}.html",
            page(f"{suite}: compare runs", body, 0, (f"data/compare-{name}.js", "compare.js")),
        )

    def series_page(self, s: Series) -> None:
        marks = []
        run_index = {pt[0]: i for i, pt in enumerate(s.points)}
        for change in self._changes_of[s.id]:
            if self._pk(change["run_id"]) in run_index:
                i = run_index[self._pk(change["run_id"])]
                title = (
                    f"event {change['event']}: {change['kind']} {change['change']:+.1%} "
                    f"({change['method']}, {change['status']})"
                )
                marks.append((i, change["kind"], title))
                for note in change["annotations"]:
                    marks.append((i, "annotation", note))
        chart_points = []
        rows = []
        key = cell_key(s.strategy, s.scenario, s.params)
        for pk, median, low, high in s.points:
            run = self.h.runs[pk]
            report = self.report_link(run)
            chart_points.append((median, low, high, report, f"{run.run_id}: {median:.4g}"))
        # The table: the latest runs (the chart links every run's report).
        for pk, median, low, high in s.points[-TABLE_RUNS:]:
            run = self.h.runs[pk]
            report = self.report_link(run)
            flames = " ".join(
                f'<a href="{e(self.run_link(run, path, 1))}">{e(kind)}</a>'
                for kind, cell, path in run.files
                if kind.endswith("flame") and cell == key
            )
            interval = f"{low:.4g}&ndash;{high:.4g}" if low is not None and high is not None else ""
            rows.append(
                f"<tr><td><a href='{e(report)}'>{e(run.run_id)}</a></td><td>{median:.4g}</td>"
                f"<td>{interval}</td><td>{e(run.kernel or '')}</td><td>{flames}</td></tr>"
            )
        chart = svg.trend(chart_points, marks, s.unit or "")
        title = f"{s.suite} · {s.strategy} · {s.scenario} · {params_text(s.params)} · {s.metric}"
        body = (
            f"<p><a href='../{self.suite_page[(s.machine_id, s.suite)]}'>{e(s.suite)}</a> on "
            f"{e(self.machine_name(s.machine_id))} · better: {e(s.better or 'no direction')}</p>"
            f"{chart}<p class='legend'>median with its 95% interval band; red lines: "
            "regressions, green: improvements, grey dashes: kernel or toolchain changes</p>"
            f"<h2>The latest {min(TABLE_RUNS, len(s.points))} runs</h2>"
            "<table><tr><th>run</th><th>median</th><th>interval</th><th>kernel</th>"
            f"<th>flame graphs</th></tr>{''.join(reversed(rows))}</table>"
        )
        self.write(f"series/{s.id}.html", page(title, body, 1))

    def report_link(self, run: Run) -> str:
        """From a series page: the run's report.html, else its run.json."""
        if run.pk not in self._reports:
            link = self.run_link(run, run.report or "run.json", 1)
            assert link is not None
            self._reports[run.pk] = link
        return self._reports[run.pk]

    def _pk(self, run_id: str) -> int:
        return self._pks[run_id]

    def machine(self, machine_id: int) -> None:
        keys = json.loads(self.h.machines[machine_id]["keys"])
        facts = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in keys.items())
        rows = "".join(
            f"<tr><td>{e(r.run_id)}</td><td>{e(r.suite)}</td><td>{e(r.status)}</td>"
            f"<td>{e(r.kernel or '')}</td><td>{e((r.git_commit or '')[:10])}</td></tr>"
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
        self._pks = {run.run_id: pk for pk, run in self.h.runs.items()}
        self.out.mkdir(parents=True, exist_ok=True)
        for folder in ("series", "data"):
            real_folder(self.out / folder)
        for asset in ("style.css", "compare.js"):
            replace_file(self.out / asset, (ASSETS / asset).read_bytes())
        self.overview()
        grouped: dict[tuple[int, str], list[Series]] = defaultdict(list)
        for s in self.h.series.values():
            grouped[(s.machine_id, s.suite)].append(s)
        for key in self.suite_page:
            self.suite(key[0], key[1], grouped.get(key, []))
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
