"""The overview (index.html: what changed first, then the machines and the latest runs) and
a page per machine."""

from __future__ import annotations

import json
from typing import Any

from harness.dashboard.bisecting import bisect_html
from harness.dashboard.context import Site
from harness.dashboard.data import Run
from harness.dashboard.markup import (
    SPARK_RUNS,
    e,
    figure,
    interval_html,
    page,
    series_label,
    short,
    unit_after,
)

# Change points listed on the overview; the rest are counted (harness history regressions).
TRIAGE_ROWS = 30
# Rows of the overview's missing-cells table.
MISSING_ROWS = 15


class OverviewPages:
    """index.html and the machines' pages."""

    def __init__(self, site: Site) -> None:
        self.site = site

    def write(self) -> None:
        """index.html and machine-<id>.html."""
        self.overview()
        for machine_id in self.site.h.machines:
            self.machine(machine_id)

    def overview(self) -> None:
        latest: dict[tuple[int, str], Run] = {}
        for run in self.site.h.runs.values():
            latest[(run.machine_id, run.suite)] = run
        body = [
            self.triage(),
            self.machines_table(),
            self.latest_table(latest),
            self.missing_table(latest),
        ]
        self.site.write(
            "index.html",
            page("Benchmark history", "".join(body), 0, ("dashboard.js",)),
        )

    def triage(self) -> str:
        changes = self.site.h.changes
        open_ = [c for c in changes if c["status"] == "open"]
        counts = ", ".join(
            f"{sum(c['kind'] == kind for c in open_)} {kind}s"
            for kind in ("regression", "improvement", "change")
        )
        summary = (
            f"<p class='summary'>Open: {counts} (in "
            f"{len({c['event'] for c in open_})} events); "
            f"{len(changes) - len(open_)} acknowledged. Largest over noise first; "
            "acknowledge an event with <code>harness history ack EVENT --reason TEXT</code>; "
            "bisect an open regression with the command on its row."
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
            "<th>landed in run (commits)</th><th>trend</th><th>state</th><th>bisect</th></tr>"
            + "".join(rows)
            + "</table>"
        )

    def change_row(self, c: dict[str, Any]) -> str:
        s = self.site.h.series[c["series_id"]]
        pk = self.site.pks[(c["fingerprint"], c["run_id"])]
        run = self.site.h.runs[pk]
        at = next((i for i, pt in enumerate(s.points) if pt[0] == pk), None)
        interval, before_commit, spark = "", "?", ""
        if at is not None:
            _, _, low, high = s.points[at]
            if low is not None and high is not None:
                interval = f" ({interval_html(s, low, high)})"
            if at > 0:
                before_commit = short(self.site.h.runs[s.points[at - 1][0]].commit)
            start = max(0, at - SPARK_RUNS // 2)
            window = [pt[1] for pt in s.points[start : start + SPARK_RUNS]]
            spark = (
                f"<svg class='spark' width='120' height='28' data-mark='{at - start}' "
                f"data-values='{e(json.dumps([round(v, 6) for v in window]))}'></svg>"
            )
        unit = unit_after(s)
        state = c["status"] + (f": {c['reason']}" if c["reason"] else "")
        notes = "".join(f"<br><small>{e(note)}</small>" for note in c["annotations"])
        return (
            f"<tr class='{e(c['status'])} {e(c['kind'])}'><td class='kind'>{e(c['kind'])}</td>"
            f"<td><a href='series/{s.id}.html'>{e(s.suite)} · {e(series_label(s))}</a>"
            f"<br><small>{e(self.site.machine_name(s.machine_id))}</small></td>"
            f"<td class='size'>{c['change']:+.1%}<br><small>{abs(c['change']) / c['noise']:.1f}"
            f"&times; noise ({c['noise']:.1%}), {e(c['method'])}</small></td>"
            f"<td>{e(figure(s, c['before']))} &rarr; {e(figure(s, c['after']))}{unit}"
            f"{interval}</td>"
            f"<td><a href='{e(self.site.report_link(run, 0))}'>{e(run.run_id)}</a><br><small>"
            f"{e(before_commit)}..{e(short(run.commit))}</small>{notes}</td>"
            f"<td>{spark}</td><td>event {c['event']}: {e(state)}</td>"
            f"<td class='bisect'>{self.bisect_cell(c, pk)}</td></tr>"
        )

    def bisect_cell(self, c: dict[str, Any], pk: int) -> str:
        """A regression's bisection kept, else on the row of its event's largest regression
        the command (the others' are on their series pages)."""
        found = self.site.bisect_range.get((pk, c["series_id"]))
        if found is None:
            return ""
        if (pk, c["series_id"]) in self.site.h.bisections:
            return bisect_html(self.site, found, 0)
        if c["status"] != "open":
            return ""
        if self.site.event_range.get(c["event"]) is found:
            return bisect_html(self.site, found, 0)
        return f"<small><a href='series/{c['series_id']}.html#bisect'>its command</a></small>"

    def machines_table(self) -> str:
        rows = []
        for machine_id in sorted(self.site.h.machines):
            mine = [r for r in self.site.h.runs.values() if r.machine_id == machine_id]
            last = mine[-1].started_at if mine else "-"
            rows.append(
                f"<tr><td><a href='machine-{machine_id}.html'>"
                f"{e(self.site.machine_name(machine_id))}</a></td><td>{len(mine)}</td>"
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
            report = self.site.run_link(run, run.report, 0)
            link = f'<a href="{e(report)}">report</a>' if report else ""
            rows.append(
                f'<tr><td><a href="{self.site.suite_page[(machine_id, suite)]}">{e(suite)}</a></td>'
                f"<td>{e(self.site.machine_name(machine_id))}</td><td>{e(run.run_id)}</td>"
                f"<td>{e(short(run.commit))}</td>"
                f"<td class='{e(run.status)}'>{e(run.status)}</td><td>{link}</td>"
                f"<td>{e(run.probes_note())}</td></tr>"
            )
        return (
            "<h2>Latest runs</h2><table><tr><th>suite</th><th>machine</th><th>run</th>"
            "<th>commit</th><th>status</th><th></th><th>notes</th></tr>"
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
            for s in self.site.h.series.values():
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

    def machine(self, machine_id: int) -> None:
        keys = json.loads(self.site.h.machines[machine_id]["keys"])
        facts = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in keys.items())
        rows = "".join(
            f"<tr><td>{e(r.run_id)}</td><td>{e(r.suite)}</td><td>{e(r.status)}</td>"
            f"<td>{e(r.kernel or '')}</td><td>{e(short(r.commit))}</td>"
            f"<td>{e(r.probes_note())}</td></tr>"
            for r in reversed(list(self.site.h.runs.values()))
            if r.machine_id == machine_id
        )
        body = (
            f"<p>fingerprint {e(self.site.h.machines[machine_id]['fingerprint'])} (sha256 of:)</p>"
            f"<table>{facts}</table>{self.siblings(machine_id, keys)}"
            "<h2>Runs</h2><table><tr><th>run</th><th>suite</th>"
            f"<th>status</th><th>kernel</th><th>commit</th><th>notes</th></tr>{rows}</table>"
        )
        self.site.write(
            f"machine-{machine_id}.html", page(self.site.machine_name(machine_id), body)
        )

    def siblings(self, machine_id: int, keys: dict[str, Any]) -> str:
        """Other machines of the same hostname (a new CPU, more memory, another governor):
        what differs, since their series are not compared with this one's."""
        items = []
        for other_id, other in self.site.h.machines.items():
            if other_id == machine_id or other["hostname"] != keys.get("hostname"):
                continue
            theirs = json.loads(other["keys"])
            changed = ", ".join(
                f"{k}: {theirs.get(k)} here {keys.get(k)}"
                for k in sorted(set(keys) | set(theirs))
                if theirs.get(k) != keys.get(k)
            )
            items.append(
                f'<li><a href="machine-{other_id}.html">{e(self.site.machine_name(other_id))}</a>: '
                f"{e(changed)}</li>"
            )
        if not items:
            return ""
        return (
            "<h2>Same hostname, another machine</h2><p>Their series are separate: what "
            f"differs from this one:</p><ul>{''.join(items)}</ul>"
        )
