"""A cell's flame graphs and its profile (top frames, frames that grew)."""

from __future__ import annotations

from typing import Any

from harness.format.numbers import DASH, human, percent
from harness.report import data
from harness.report.data import Flame
from harness.report.sections.context import Context
from harness.report.sections.markup import esc
from harness.rundoc.model import Cell


def flame_graphs(page: Context, cell: Cell) -> None:
    page.add("<h3>Flame graphs</h3>")
    flames = data.flames(page.run_dir, cell, page.baseline)
    drawn = [f for f in flames if f.href]
    if drawn:
        page.add('<div class="flames">')
        for flame in drawn:
            flame_figure(page, cell, flame)
        page.add("</div>")
    for gap in data.flame_gaps(flames, skip_baseline_diff=True):
        page.add(f'<p class="missing">{esc(gap)}</p>')
    if any(f.reason == data.BASELINE_CELL for f in flames):
        page.add('<p class="dim">no differential flame graph: this is the baseline cell</p>')
    for flame in flames:
        if flame.folded_href and not flame.href:
            page.add(
                f'<p>{esc(flame.kind.title)} folded stacks: <a href="{esc(flame.folded_href)}">'
                f"{esc(flame.folded_path)}</a></p>"
            )
        for problem in flame.problems:
            page.add(f'<p class="missing">{esc(problem)}</p>')


def flame_figure(page: Context, cell: Cell, flame: Flame) -> None:
    assert flame.href is not None and flame.path is not None
    title = f"{flame.kind.title} flame graph"
    if flame.kind.key == "diff":
        title += f" vs {cell.profile.diff_baseline or page.baseline}"
    links = [f'<a href="{esc(flame.href)}">open {esc(flame.path)}</a>']
    if flame.folded_href:
        links.append(f'<a href="{esc(flame.folded_href)}">folded stacks</a>')
    size = data.svg_size(page.run_dir, flame.path)
    dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
    page.add(
        '<figure class="flame">',
        f"<figcaption><b>{esc(title)}</b> · {' · '.join(links)}</figcaption>",
        f'<a href="{esc(flame.href)}"><img src="{esc(flame.href)}"{dims} loading="lazy" '
        f'alt="{esc(title)} of {esc(page.name(cell))}"></a>',
        "</figure>",
    )


def profile(page: Context, cell: Cell) -> None:
    profile = cell.profile
    page.add("<h3>Profile</h3>")
    if profile.empty:
        page.add(
            '<p class="missing">no profile: run.json has no profile for this cell '
            "(the profiler did not run)</p>"
        )
        return
    facts = []
    if profile.samples is not None:
        facts.append(f"{profile.samples:,} on-CPU samples")
    if profile.client_samples is not None:
        facts.append(f"{profile.client_samples:,} of them in the client")
    share = data.mutex_share(page, cell)
    if share is not None:
        facts.append(f"mutex share {percent(share)} of the client's samples")
    if profile.offcpu_ns is not None:
        facts.append(f"{human(float(profile.offcpu_ns), time_ns=True)} off-CPU")
    if profile.wakeups is not None:
        facts.append(f"{profile.wakeups:,} wake-ups")
    if facts:
        page.add(f"<p>{esc(' · '.join(facts))}</p>")
    # Notes already said under the flame graphs are not repeated.
    said = set(data.flame_gaps(data.flames(page.run_dir, cell, page.baseline)))
    for note in data.profile_notes(profile):
        if note not in said:
            page.add(f'<p class="note">{esc(note)}</p>')

    top = profile.top_self or []
    page.add(f"<h4>Top {data.TOP_FRAMES} frames by self time (client)</h4>")
    if top:
        page.add(
            '<table><tr><th class="l">frame</th><th>samples</th><th>share</th></tr>',
            *(
                f'<tr><td class="frame">{esc(t.frame)}</td>'
                f"<td>{esc(_count(t.samples))}</td>"
                f"<td>{esc(_share(t.share))}</td></tr>"
                for t in top[: data.TOP_FRAMES]
            ),
            "</table>",
        )
    else:
        page.add('<p class="missing">no self-time frames in run.json for this cell</p>')

    against = profile.diff_baseline or page.baseline
    page.add(f"<h4>Frames that grew most vs {esc(against)}</h4>")
    grew = profile.grew or []
    if grew:
        page.add(
            '<table><tr><th class="l">frame</th><th>share in baseline</th>'
            "<th>share here</th><th>growth</th></tr>",
            *(
                f'<tr><td class="frame">{esc(g.frame)}</td>'
                f"<td>{esc(_share(g.baseline_share))}</td>"
                f"<td>{esc(_share(g.share))}</td>"
                f"<td>{esc(_points(g.delta))}</td></tr>"
                for g in grew[: data.TOP_FRAMES]
            ),
            "</table>",
        )
    elif cell.strategy == page.baseline:
        page.add('<p class="dim">this is the baseline cell</p>')
    else:
        why = [n for n in data.profile_notes(profile) if data.note_kind(n) == "diff"]
        page.add(
            '<p class="missing">no comparison of frames with the baseline in run.json'
            + (f": {esc('; '.join(why))}" if why else "")
            + "</p>"
        )


def _count(value: Any) -> str:
    return f"{int(value):,}" if isinstance(value, int | float) else DASH


def _share(value: Any) -> str:
    return percent(float(value)) if isinstance(value, int | float) else DASH


def _points(value: Any) -> str:
    """A difference of two shares, in percentage points."""
    if not isinstance(value, int | float):
        return DASH
    return f"{value * 100:+.2g} pp" if abs(value) < 0.01 else f"{value * 100:+.1f} pp"
