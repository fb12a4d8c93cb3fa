"""The bisection of a regressed series as the dashboard shows it, on the event's row and on
the series' page: the result kept by `harness history bisect` (the first bad commit, its
effect, the finding, the differential flame graph), else the command to run."""

from __future__ import annotations

from harness.dashboard.context import Site
from harness.dashboard.markup import e
from harness.history.bisect_ranges import SeriesRange
from harness.history.bisections import Bisection


def bisect_html(site: Site, found: SeriesRange, depth: int) -> str:
    """The kept result of the series' bisection at this event, else its command (or why
    there is none)."""
    kept = site.h.bisections.get((found.run_pk, found.series_id))
    if kept is not None:
        return result_html(site, kept, depth)
    if found.command is None:
        return f"<small class='no-bisect'>no bisect command: {e(found.reason)}</small>"
    keep = f"harness history bisect {found.event}"
    if site.event_range.get(found.event) is not found:
        keep += f" --series {found.series_id}"
    return (
        f"<code class='command'>{e(found.command)}</code><br><small>or <code "
        f"class='command'>{e(keep)}</code> to run it and keep its result here</small>"
    )


def result_html(site: Site, kept: Bisection, depth: int) -> str:
    """What a bisection came to, with the links to its differential flame graph and its
    bisect.json."""
    if kept.verdict == "found" and kept.first_bad is not None:
        text = (
            f"first bad commit <code>{e(kept.first_bad[:12])}</code> "
            f"{e(kept.first_bad_subject or '')}<br>"
            f"<span class='effect'>{e(kept.effect_text())}</span> against "
            f"<code>{e(kept.good[:12])}</code>"
        )
    else:
        text = e(kept.summary())
    if kept.finding:
        text += f"<br><small>{e(kept.finding)}</small>"
    links = []
    if kept.diff_flamegraph:
        link = site.file_link(kept.diff_flamegraph, depth)
        links.append(f"<a href='{e(link)}'>differential flame graph</a>")
    links.append(f"<a href='{e(site.file_link(kept.folder, depth))}/bisect.json'>bisect.json</a>")
    return (
        f"<div class='bisection {e(kept.verdict)}'>{text}<br><small>"
        f"{' · '.join(links)} · bisected {e(kept.finished_at)}</small></div>"
    )
