"""The page's header (what ran, where, how) and its table of contents."""

from __future__ import annotations

from harness.format.cells import param_text
from harness.format.notes import STATUS_NOTES
from harness.report import data
from harness.report.sections.context import Context
from harness.report.sections.markup import esc


def header(page: Context, title: str) -> None:
    run, config, git = page.run, page.config, page.run.git
    status = run.status
    page.add(
        f"<header><h1>{esc(title)} "
        f'<span class="status status-{esc(status)}">{esc(status)}</span></h1>'
    )
    if status in STATUS_NOTES:
        page.add(f'<p class="note">status {esc(status)}: {esc(STATUS_NOTES[status][1])}</p>')
    facts: list[tuple[str, str]] = [
        ("suite", esc(run.suite)),
        ("run", f"<code>{esc(run.run_id)}</code>"),
        ("started", f"{esc(run.started_at)}, finished {esc(run.finished_at)}"),
        ("host", esc(data.host_text(run.host))),
        (
            "git commit",
            (f"<code>{esc(git.commit)}</code>" if git.commit else "no commit")
            + (" (dirty tree)" if git.dirty else ""),
        ),
        ("repeats", esc(data.repeats_text(config))),
        ("duration", f"{esc(config.duration_s)} s per repeat"),
        ("warm-up", f"{esc(config.warmup_s)} s"),
        ("probes", esc(data.probes_text(config))),
        ("probe overhead", "measured" if config.probe_overhead else "not measured"),
        ("explain repeats", esc(data.explain_text(config))),
        ("baseline", esc(page.baseline) if page.baseline else "none"),
    ]
    twins = [f"{s} vs {t}" for s, t in (config.compare_with or {}).items()]
    if twins:  # as describe names them; the summary's notes say which the run lacked
        facts.append(("twins", esc(", ".join(twins))))
    if config.mutex_patterns:
        patterns = ", ".join(f"<code>{esc(p)}</code>" for p in config.mutex_patterns)
        facts.append(("mutex patterns", patterns))
    facts.append(("scenario", esc(config.scenario)))
    if config.params:
        params = "; ".join(
            f"{k} = {', '.join(param_text(v) for v in vs)}" for k, vs in config.params.items()
        )
        facts.append(("params", esc(params)))
    command = data.command_text(config)
    facts.append(("command", f"<code>{esc(command)}</code>" if command else "not recorded"))
    page.add('<dl class="facts">')
    for term, value in facts:
        page.add(f"<dt>{esc(term)}</dt><dd>{value}</dd>")
    page.add("</dl></header>")


def contents(page: Context) -> None:
    page.add(
        "<nav><h2>Contents</h2><ul>",
        '<li><a href="#summary">Summary tables</a></li>',
        '<li><a href="#findings">Findings</a></li>',
        '<li><a href="#plots">Plots</a></li>',
        '<li><a href="#failures">Failures</a></li>',
    )
    if page.run.probe_overhead:
        page.add('<li><a href="#overhead">Probe overhead</a></li>')
    if page.config.explain_repeats:
        page.add('<li><a href="#explain">With probes</a></li>')
    for cell in page.cells:
        page.add(f'<li><a href="#{page.anchor(cell)}">{esc(page.name(cell))}</a></li>')
    page.add("</ul></nav>")
