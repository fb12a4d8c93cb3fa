"""The terminal's summary tables of a run: one rich table per scenario, every figure with its
interval.

By default a row is one line and the table fits the console's width: the headline metrics,
the ratio to the baseline and as many per-op figures as fit, the rest named under the table
(report.html and run.json have them all). `--wide` prints every column, spread over lines when
the console is narrow (`harness compare` lays out its table alike), and every note in full."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.cpuset import header as cpuset_header
from harness.format.cells import cell_summary, param_text, varying_params
from harness.format.cpu_notes import cpu_notes
from harness.format.metrics import (
    SHARE_UNIT,
    TRAILING_METRICS,
    fitted_candidates,
    heading,
    headline_metrics,
    metric_columns,
    ratio_metric,
    table_labels,
)
from harness.format.names import printable
from harness.format.notes import (
    STATUS_NOTES,
    grouped,
    notes,
    probe_notes,
    probe_summary,
    stability_summary,
)
from harness.format.numbers import (
    DASH,
    TIMES,
    human,
    human_p,
    human_ratio,
    is_time_metric,
    join_range,
    percent,
)
from harness.format.twins import TWIN_MARK, VsColumn, missing_twins, twin_clause, vs_column
from harness.probes import bpfstats, registry
from harness.probes.overhead_pairs import explain_footer, overhead_cpu_shares, paired_text
from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import Cell, OverheadInterval, RunDoc
from harness.rundoc.view import RunView
from harness.stability import stability_notes
from harness.stats import CONFIDENCE, params_key

Layout = Literal["wide", "narrow", "stacked"]
LAYOUTS: tuple[Layout, ...] = ("wide", "narrow", "stacked")
VERDICT_STYLES = {"better": "bold green", "worse": "bold red", "changed": "bold yellow"}


def _with_interval(text: Text, low: str, high: str, layout: Layout) -> None:
    """wide: "1.87M [1.85-1.88M]"; narrow: the interval on a second line; stacked: one
    end of the interval a line."""
    if layout == "wide":
        text.append(f" [{join_range(low, high)}]", style="dim")
    elif layout == "narrow":
        text.append(f"\n{join_range(low, high)}", style="dim")
    else:
        text.append(f"\n{low}{DASH}\n{high}", style="dim")


def figure(
    summary: Mapping[str, Any] | None,
    time_ns: bool,
    layout: Layout,
    share: bool = False,
    compact: bool = False,
) -> Text:
    """Median and, unless there was a single repeat, its interval (its ends to 3 digits
    when `compact` or the layout is not wide)."""
    if not summary:
        return Text(DASH, style="dim")

    def show(value: Any, compact: bool = False) -> str:
        return percent(float(value)) if share else human(float(value), time_ns, compact)

    text = Text(show(summary["median"]))
    if summary.get("n", 0) > 1:
        compact = compact or layout != "wide"
        low, high = show(summary["ci95_low"], compact), show(summary["ci95_high"], compact)
        if share:
            low = low.rstrip("%")
        _with_interval(text, low, high, layout)
    return text


def ratio_figure(entry: Mapping[str, Any] | None, layout: Layout) -> Text:
    """Ratio with a significance mark coloured by verdict, then its bootstrap interval.

    Only wide tables have a p column; the others show p here, on the last line.
    """
    if entry is None or entry.get("ratio") is None:
        return Text(DASH, style="dim")
    text = Text(human_ratio(float(entry["ratio"])))
    if entry.get("significant"):
        text.append(" *", style=VERDICT_STYLES.get(str(entry.get("verdict")), "bold"))
    if entry.get("ci95_low") is not None and entry.get("ci95_high") is not None:
        low, high = human_ratio(float(entry["ci95_low"])), human_ratio(float(entry["ci95_high"]))
        _with_interval(text, low[:-1], high[:-1], layout)
    if layout != "wide" and entry.get("p_value") is not None:
        text.append(f"\np={human_p(float(entry['p_value']))}", style="dim")
    return text


def fits(table: Table, console: Console) -> bool:
    # Measure without the console's width limit, which would clamp the answer to it.
    unbounded = console.options.update(max_width=1_000_000)
    return console.measure(table, options=unbounded).maximum <= console.width


def fitting_table(build: Callable[[Layout], Table], console: Console) -> Table:
    """The first layout, from the roomiest, whose table fits the console's width."""
    for layout in LAYOUTS:
        table = build(layout)
        if fits(table, console):
            break
    return table


def new_table(title: str | None, layout: Layout, roomy: bool = True) -> Table:
    """Wide: roomy columns unless not `roomy` (the default run table: one space between
    columns). Narrow: tighter gaps and a blank line between two-line rows.

    Columns fold rather than cut with "…" when even the stacked layout does not fit: a
    figure may then break across lines, but no digit of it is hidden.
    """
    if layout == "wide" and roomy:
        return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
        leading=0 if layout == "wide" else 1,
    )


def always_zero(summaries: Sequence[Mapping[str, Any]], metric: str) -> bool:
    """True when the metric was reported and was 0 in every repeat of every cell (given their
    summaries)."""
    reported = [s[metric] for s in summaries if s.get(metric)]
    return bool(reported) and all(s["min"] == 0 and s["max"] == 0 for s in reported)


def runs_text(cell: Cell) -> Text:
    ok, failed = cell.runs
    return Text(f"{ok}/{ok + failed}", style="red" if failed else "")


def summaries_of(view: RunView, cells: Sequence[Cell]) -> list[Mapping[str, Any]]:
    """Each cell's figures, metric -> its summary."""
    return [cell_summary(view.cell_doc(cell)) for cell in cells]


def scenario_table(
    view: RunView,
    scenario: str,
    cells: Sequence[Cell],
    units: Mapping[str, str],
    labels: Mapping[str, str],
    ratios: Mapping[tuple[Any, str], Mapping[str, Any]],
    vs: VsColumn | None,
    columns: Sequence[str],
    layout: Layout,
    full: bool = True,
) -> Table:
    """Rows are cells. Below wide, p moves into the ratio cell and the run count into the
    strategy cell (only when some cell lost repeats), so 100 columns (80 stacked) suffice.
    Not `full` (the default table, one line a row): no p column (the * says p < 0.05) and a
    runs column only when some cell lost repeats."""
    table = new_table(f"scenario {printable(scenario)}", layout, roomy=full)
    irregular = len({runs_text(cell).plain for cell in cells}) > 1 or any(
        cell.failures for cell in cells
    )
    wide = layout == "wide"
    show_p = wide and full
    show_runs = wide and (full or irregular)
    table.add_column("strategy", no_wrap=True, overflow="fold")
    params = varying_params([view.cell_doc(cell) for cell in cells])
    for name in params:
        table.add_column(Text(printable(name)), justify="right", no_wrap=True, overflow="fold")
    for name in columns:
        table.add_column(Text(labels.get(name, name)), justify="right", overflow="fold")
    if vs is not None:
        table.add_column(Text(printable(vs.heading)), justify="right", overflow="fold")
        if show_p:
            table.add_column("p", justify="right", no_wrap=True, overflow="fold")
    if show_runs:
        table.add_column("runs", justify="right", no_wrap=True, overflow="fold")

    for cell, summary in zip(cells, summaries_of(view, cells), strict=True):
        strategy = Text(printable(cell.strategy))
        if not wide and irregular:
            strategy.append("\n").append_text(runs_text(cell)).append(" runs")
        row: list[Text | str] = [strategy]
        row += [Text(param_text(cell.params.get(name))) for name in params]
        row += [
            figure(
                summary.get(name),
                is_time_metric(name, units.get(name)),
                layout,
                share=units.get(name) == SHARE_UNIT,
                compact=not full,
            )
            for name in columns
        ]
        if vs is not None:
            entry = ratios.get((cell.strategy, params_key(cell.params)))
            p_value = entry["p_value"] if entry else None
            uncompared = vs.uncompared(cell.strategy)
            if uncompared:
                row.append(Text("baseline", style="dim"))
            else:
                ratio = ratio_figure(entry, layout)
                if vs.twin(cell.strategy) is not None:  # named under the table
                    ratio.append(f" {TWIN_MARK}", style="bold")
                row.append(ratio)
            if show_p:
                row.append("" if uncompared or p_value is None else human_p(p_value))
        if show_runs:
            row.append(runs_text(cell))
        table.add_row(*row)
    return table


def _header(run: RunDoc) -> Text:
    config, host, git = run.config, run.host, run.git
    on_off: dict[bool | None, str] = {True: "on", False: "off"}
    text = Text()
    text.append(printable(run.suite), style="bold")
    text.append(f" · run {run.run_id} · {run.status}")
    facts = [
        f"{config.repeats} repeats {TIMES} {config.duration_s} s (warm-up {config.warmup_s} s)",
        f"git {git.commit[:10] if git.commit else 'no commit'}",
    ]
    if git.dirty:
        facts.append("dirty tree")
    text.append("\n" + " · ".join(facts), style="dim")
    placement = cpuset_header(config.cpuset)
    if placement:
        auto = " (automatic split)" if config.cpuset_auto else ""
        text.append(f"\n{placement}{auto}", style="dim")
    text.append(
        f"\nhost {host.hostname} · {host.cpu_model} · {host.logical_cpus} CPUs · "
        f"governor {host.governor} · SMT {on_off.get(host.smt, 'unknown')} · "
        f"turbo {on_off.get(host.turbo, 'unknown')}",
        style="dim",
    )
    return text


def _failure_lines(cells: Sequence[Cell], params: Sequence[str]) -> list[Text]:
    lines = []
    for cell in cells:
        label = " ".join(
            [printable(cell.strategy)]
            + [f"{printable(name)}={param_text(cell.params.get(name))}" for name in params]
        )
        for failure in cell.failures[:3]:
            error = failure.error.strip().splitlines()
            last = printable(error[-1]) if error else "no message"
            lines.append(
                Text(
                    f"failed: {label} repeat {failure.repeat} (exit {failure.exit_code}): {last}",
                    style="red",
                )
            )
        if len(cell.failures) > 3:
            lines.append(
                Text(f"… and {len(cell.failures) - 3} more failures of {label}", style="red")
            )
    return lines


def _legend(
    summaries: Sequence[Mapping[str, Any]],
    metric: str | None,
    labels: Mapping[str, str],
    twins: str = "",
) -> Text:
    """What the figures are; `twins`: the ratio's clause on twins (format/twins.py)."""
    text = Text(
        "median of the repeats [95% interval of the median, from order statistics]",
        style="dim",
    )
    if metric is not None:
        text.append(
            f"; vs: ratio of {printable(labels.get(metric, metric))} medians to the "
            f"baseline{twins} [95% bootstrap interval]; * Mann-Whitney U two-sided p < 0.05 "
            "(green better, red worse)",
            style="dim",
        )
    short = sorted(
        {
            (int(s["n"]), float(s.get("ci_coverage", 1.0)))
            for summary in summaries
            for s in summary.values()
            if float(s.get("ci_coverage", 1.0)) < CONFIDENCE
        }
    )
    for n, coverage in short:
        if n == 1:
            text.append("\nn=1: a single repeat, no interval", style="yellow")
        else:
            text.append(
                f"\nn={n}: the interval is [min{DASH}max] and covers the median with "
                f"{coverage:.1%} only (n ≥ 6 reaches 95%)",
                style="yellow",
            )
    return text


def overhead_table(view: RunView) -> Table | None:
    """Ops/s with each probe set / without probes, per cell and over the run."""
    run = view.run
    overall = run.probe_overhead
    if not overall:
        return None
    params = varying_params(view.cell_docs)
    title = "probe overhead: median ops/s with the probes / without"
    if run.probe_overhead_paired:
        title = (
            "probe overhead: ops/s with the probes / without, paired by round: median, "
            "its interval; * Wilcoxon signed-rank p < 0.05"
        )
    table = new_table(title, "wide")
    table.add_column("strategy", no_wrap=True)
    for name in params:
        table.add_column(Text(printable(name)), justify="right")
    for key in overall:
        table.add_column(key, justify="right")

    def ratio(value: float | None, paired: OverheadInterval | None = None) -> Text:
        if paired is not None and paired.ratio is not None:
            return paired_text(as_json(paired))
        return Text(human_ratio(value)) if value is not None else Text(DASH, style="dim")

    for cell in run.cells:
        ratios = cell.probe_overhead or {}
        pairs = cell.probe_overhead_paired or {}
        row: list[Text | str] = [Text(printable(cell.strategy))]
        row += [Text(param_text(cell.params.get(name))) for name in params]
        table.add_row(*row, *(ratio(ratios.get(key), pairs.get(key)) for key in overall))
    pooled = run.probe_overhead_paired or {}
    label = Text("all cells (rounds pooled)" if pooled else "all cells (geometric mean)")
    label.stylize("bold")
    table.add_row(
        label, *([""] * len(params)), *(ratio(v, pooled.get(k)) for k, v in overall.items())
    )
    shares = overhead_cpu_shares(view.cell_docs, list(overall))
    if shares:
        table.add_row(
            Text("BPF CPU share", style="dim"),
            *([""] * len(params)),
            *(Text(shares.get(k) or "", style="dim") for k in overall),
        )
    return table


def fitted_table(
    build: Callable[[Sequence[str], Layout, bool], Table],
    candidates: Sequence[str],
    required: Sequence[str],
    console: Console,
) -> tuple[Table, list[str]]:
    """The default table and its metric columns: one line a row, the `required` columns and
    the candidates, in order, up to the first that would make the table wider than the
    console. When even the required ones do not fit on one line, they are spread over lines
    as in --wide."""
    chosen = [name for name in candidates if name in required]
    if not fits(build(chosen, "wide", False), console):
        return fitting_table(lambda layout: build(chosen, layout, False), console), chosen
    for name in candidates:
        if name in chosen:
            continue
        trial = [c for c in candidates if c in chosen or c == name]  # in the table's order
        if not fits(build(trial, "wide", False), console):
            break
        chosen = trial
    return build(chosen, "wide", False), chosen


def print_run(run: RunDoc, console: Console, wide: bool = False) -> None:
    """Header, one table per scenario, failures, notes, and a legend of what the brackets
    mean. By default each table fits the console with a line a row and the notes are grouped;
    `wide`: every column and every note."""
    console.print(_header(run))
    if run.status in STATUS_NOTES:
        style, note = STATUS_NOTES[run.status]
        console.print(Text(f"status {run.status}: {note}", style=style))
    cells = run.cells
    if not cells:
        console.print("no cells in this run")
        return

    view = RunView(run)
    doc = view.doc  # for the helpers of harness/format/, which read run.json's dicts
    summaries = summaries_of(view, cells)
    headline = headline_metrics(doc)
    columns = metric_columns(summaries, headline, registry.columns())
    units = {**run.units(), **registry.share_units()}
    labels = table_labels(doc, registry.columns())
    headings = {name: heading(name, labels, units) for name in columns}
    metric = ratio_metric(doc, columns) if run.config.baseline else None
    comparisons = doc["comparisons"]

    shown: list[Mapping[str, Any]] = []
    hidden: dict[str, None] = {}  # columns --wide has and the default tables left out
    always: dict[str, bool] = {}  # timeouts, errors: 0 in every repeat of every scenario?
    for scenario in dict.fromkeys(cell.scenario for cell in cells):
        group = [cell for cell in cells if cell.scenario == scenario]
        figures = summaries_of(view, group)
        ratios = {
            (e["candidate"], params_key(e["params"])): e
            for e in comparisons
            if e["metric"] == metric and e["scenario"] == scenario
        }
        shown += ratios.values()
        zero = [n for n in TRAILING_METRICS if n in columns and always_zero(figures, n)]
        kept = [name for name in columns if name not in zero]
        vs = vs_column(run, group) if metric else None
        build = partial(scenario_table, view, scenario, group, units, headings, ratios, vs)
        if wide:
            table = fitting_table(partial(build, kept), console)
        else:
            reported = [n for n in kept if any(f.get(n) for f in figures)]
            candidates = fitted_candidates(reported, headline, units, registry.columns())
            required = [metric] if metric in candidates else candidates[:1]
            table, chosen = fitted_table(build, candidates, required, console)
            hidden.update(dict.fromkeys(name for name in kept if name not in chosen))
        console.print(table)
        footnote = vs.footnote() if vs is not None else None
        if footnote is not None:
            console.print(Text(printable(footnote), style="dim"))
        if zero and wide:
            console.print(Text(f"{' and '.join(zero)}: 0 in every repeat", style="dim"))
        for name in TRAILING_METRICS:
            if name in columns:
                always[name] = always.get(name, True) and name in zero
        for line in _failure_lines(group, varying_params([view.cell_doc(c) for c in group])):
            console.print(line)
    zero_everywhere = [name for name, zero in always.items() if zero]
    if zero_everywhere and not wide:
        console.print(Text(f"{' and '.join(zero_everywhere)}: 0 in every repeat", style="dim"))
    if hidden:
        names = ", ".join(printable(labels.get(name, name)) for name in hidden)
        console.print(
            Text(
                f"{len(hidden)} more column{'s' if len(hidden) > 1 else ''} ({names}) and "
                "the p-values: --wide, report.html, --json",
                style="dim",
            )
        )
    cell_docs = view.cell_docs
    cpu = cpu_notes(comparisons, metric, labels, varying_params(cell_docs))
    if wide:
        probes = probe_notes(cell_docs, run.named_probes())
        unstable = stability_notes(cell_docs, labels)
    else:
        probes = probe_summary(cell_docs, run.named_probes())
        unstable = stability_summary(cell_docs, labels)
        what = printable(labels.get(str(metric), str(metric)))
        cpu = grouped(
            cpu,
            f"CPU per op tells {len(cpu)} cells from the baseline where {what} does not: "
            "see report.html",
        )
    twin_notes = [f"note: {printable(line)}" for line in missing_twins(run)]
    for note in twin_notes + notes(shown) + probes:
        console.print(Text(note, style="yellow"))
    for note in cpu:
        console.print(Text(note, style="cyan"))
    for note in unstable:
        console.print(Text(note, style="magenta"))
    overhead = overhead_table(view)
    if overhead is not None:
        console.print(overhead)
    cost = bpfstats.footer(cell_docs)
    if cost is not None:
        console.print(Text(cost, style="dim"))
    explain = explain_footer(doc)
    if explain is not None:
        console.print(Text(explain, style="dim"))
    console.print(_legend(summaries, metric, labels, twin_clause(run)))
