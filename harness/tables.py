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
    PERCENT_METRICS,
    TRAILING_METRICS,
    fitted_candidates,
    heading,
    headline_metrics,
    metric_columns,
    ratio_metric,
    table_labels,
)
from harness.format.notes import (
    STATUS_NOTES,
    grouped,
    named_probes,
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
from harness.probes import bpfstats
from harness.probes.overhead_pairs import explain_footer, overhead_cpu_shares, paired_text
from harness.stability import stability_notes
from harness.stats import CONFIDENCE, compare_cells, params_key

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


def always_zero(cells: Sequence[Mapping[str, Any]], metric: str) -> bool:
    """True when the metric was reported and was 0 in every repeat of every cell."""
    summaries = [cell_summary(cell).get(metric) for cell in cells]
    reported = [s for s in summaries if s]
    return bool(reported) and all(s["min"] == 0 and s["max"] == 0 for s in reported)


def runs_text(cell: Mapping[str, Any]) -> Text:
    ok, failed = len(cell.get("repeats") or []), len(cell.get("failures") or [])
    return Text(f"{ok}/{ok + failed}", style="red" if failed else "")


def scenario_table(
    scenario: str,
    cells: Sequence[Mapping[str, Any]],
    units: Mapping[str, str],
    labels: Mapping[str, str],
    ratios: Mapping[tuple[Any, str], Mapping[str, Any]],
    baseline: str | None,
    columns: Sequence[str],
    layout: Layout,
    full: bool = True,
) -> Table:
    """Rows are cells. Below wide, p moves into the ratio cell and the run count into the
    strategy cell (only when some cell lost repeats), so 100 columns (80 stacked) suffice.
    Not `full` (the default table, one line a row): no p column (the * says p < 0.05) and a
    runs column only when some cell lost repeats."""
    table = new_table(f"scenario {scenario}", layout, roomy=full)
    irregular = len({runs_text(cell).plain for cell in cells}) > 1 or any(
        cell.get("failures") for cell in cells
    )
    wide = layout == "wide"
    show_p = wide and full
    show_runs = wide and (full or irregular)
    table.add_column("strategy", no_wrap=True, overflow="fold")
    params = varying_params(cells)
    for name in params:
        table.add_column(name, justify="right", no_wrap=True, overflow="fold")
    for name in columns:
        table.add_column(labels.get(name, name), justify="right", overflow="fold")
    if baseline is not None:
        table.add_column(f"vs {baseline}", justify="right", overflow="fold")
        if show_p:
            table.add_column("p", justify="right", no_wrap=True, overflow="fold")
    if show_runs:
        table.add_column("runs", justify="right", no_wrap=True, overflow="fold")

    for cell in cells:
        summary = cell_summary(cell)
        strategy = Text(str(cell.get("strategy")))
        if not wide and irregular:
            strategy.append("\n").append_text(runs_text(cell)).append(" runs")
        row: list[Text | str] = [strategy]
        row += [param_text((cell.get("params") or {}).get(name)) for name in params]
        row += [
            figure(
                summary.get(name),
                is_time_metric(name, units.get(name)),
                layout,
                share=name in PERCENT_METRICS,
                compact=not full,
            )
            for name in columns
        ]
        if baseline is not None:
            entry = ratios.get((cell.get("strategy"), params_key(cell.get("params"))))
            p_value = entry.get("p_value") if entry else None
            if cell.get("strategy") == baseline:
                row.append(Text("baseline", style="dim"))
            else:
                row.append(ratio_figure(entry, layout))
            if show_p:
                row.append(
                    "" if cell.get("strategy") == baseline or p_value is None else human_p(p_value)
                )
        if show_runs:
            row.append(runs_text(cell))
        table.add_row(*row)
    return table


def _header(doc: Mapping[str, Any]) -> Text:
    config = doc.get("config") or {}
    host = doc.get("host") or {}
    git = doc.get("git") or {}
    on_off: dict[Any, str] = {True: "on", False: "off"}
    text = Text()
    text.append(str(doc.get("suite")), style="bold")
    text.append(f" · run {doc.get('run_id')} · {doc.get('status')}")
    facts = []
    if config.get("repeats") is not None:
        facts.append(
            f"{config['repeats']} repeats {TIMES} {config.get('duration_s')} s "
            f"(warm-up {config.get('warmup_s')} s)"
        )
    commit = git.get("commit")
    facts.append(f"git {str(commit)[:10] if commit else 'no commit'}")
    if git.get("dirty"):
        facts.append("dirty tree")
    text.append("\n" + " · ".join(facts), style="dim")
    placement = cpuset_header(config.get("cpuset"))
    if placement:
        auto = " (automatic split)" if config.get("cpuset_auto") else ""
        text.append(f"\n{placement}{auto}", style="dim")
    text.append(
        f"\nhost {host.get('hostname')} · {host.get('cpu_model')} · "
        f"{host.get('logical_cpus')} CPUs · governor {host.get('governor')} · "
        f"SMT {on_off.get(host.get('smt'), 'unknown')} · "
        f"turbo {on_off.get(host.get('turbo'), 'unknown')}",
        style="dim",
    )
    return text


def _failure_lines(cells: Sequence[Mapping[str, Any]], params: Sequence[str]) -> list[Text]:
    lines = []
    for cell in cells:
        failures = cell.get("failures") or []
        label = " ".join(
            [str(cell.get("strategy"))]
            + [f"{name}={param_text((cell.get('params') or {}).get(name))}" for name in params]
        )
        for failure in failures[:3]:
            error = str(failure.get("error") or "").strip().splitlines()
            lines.append(
                Text(
                    f"failed: {label} repeat {failure.get('repeat')} "
                    f"(exit {failure.get('exit_code')}): {error[-1] if error else 'no message'}",
                    style="red",
                )
            )
        if len(failures) > 3:
            lines.append(Text(f"… and {len(failures) - 3} more failures of {label}", style="red"))
    return lines


def _legend(
    summaries: Sequence[Mapping[str, Any]], metric: str | None, labels: Mapping[str, str]
) -> Text:
    text = Text(
        "median of the repeats [95% interval of the median, from order statistics]",
        style="dim",
    )
    if metric is not None:
        text.append(
            f"; vs: ratio of {labels.get(metric, metric)} medians to the baseline "
            "[95% bootstrap interval]; * Mann-Whitney U two-sided p < 0.05 "
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


def _comparisons(doc: Mapping[str, Any], metric: str | None) -> list[Mapping[str, Any]]:
    """The run's comparisons; computed here only for a run.json written without them."""
    if "comparisons" in doc:
        return list(doc.get("comparisons") or [])
    baseline = (doc.get("config") or {}).get("baseline")
    if baseline and metric:
        return list(compare_cells(doc.get("cells") or [], baseline, [{"name": metric}]))
    return []


def overhead_table(doc: Mapping[str, Any]) -> Table | None:
    """Ops/s with each probe set / without probes, per cell and over the run."""
    overall = doc.get("probe_overhead")
    if not overall:
        return None
    cells = list(doc.get("cells") or [])
    params = varying_params(cells)
    title = "probe overhead: median ops/s with the probes / without"
    if doc.get("probe_overhead_paired"):
        title = (
            "probe overhead: ops/s with the probes / without, paired by round: median, "
            "its interval; * Wilcoxon signed-rank p < 0.05"
        )
    table = new_table(title, "wide")
    table.add_column("strategy", no_wrap=True)
    for name in params:
        table.add_column(name, justify="right")
    for key in overall:
        table.add_column(key, justify="right")

    def ratio(value: Any, paired: Any = None) -> Text:
        if isinstance(paired, Mapping) and paired.get("ratio") is not None:
            return paired_text(paired)
        return Text(human_ratio(float(value))) if value is not None else Text(DASH, style="dim")

    for cell in cells:
        ratios = cell.get("probe_overhead") or {}
        pairs = cell.get("probe_overhead_paired") or {}
        row: list[Text | str] = [str(cell.get("strategy"))]
        row += [param_text((cell.get("params") or {}).get(name)) for name in params]
        table.add_row(*row, *(ratio(ratios.get(key), pairs.get(key)) for key in overall))
    pooled = doc.get("probe_overhead_paired") or {}
    label = Text("all cells (rounds pooled)" if pooled else "all cells (geometric mean)")
    label.stylize("bold")
    table.add_row(
        label, *([""] * len(params)), *(ratio(v, pooled.get(k)) for k, v in overall.items())
    )
    shares = overhead_cpu_shares(cells, list(overall))
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


def print_run(doc: Mapping[str, Any], console: Console, wide: bool = False) -> None:
    """Header, one table per scenario, failures, notes, and a legend of what the brackets
    mean. By default each table fits the console with a line a row and the notes are grouped;
    `wide`: every column and every note."""
    console.print(_header(doc))
    status = str(doc.get("status"))
    if status in STATUS_NOTES:
        style, note = STATUS_NOTES[status]
        console.print(Text(f"status {status}: {note}", style=style))
    cells = list(doc.get("cells") or [])
    if not cells:
        console.print("no cells in this run")
        return

    summaries = [cell_summary(cell) for cell in cells]
    headline = headline_metrics(doc)
    columns = metric_columns(summaries, headline)
    units = {str(m["name"]): str(m.get("unit", "")) for m in doc.get("metrics") or []}
    labels = table_labels(doc)
    headings = {name: heading(name, labels, units) for name in columns}
    baseline = (doc.get("config") or {}).get("baseline")
    metric = ratio_metric(doc, columns) if baseline else None
    comparisons = _comparisons(doc, metric)

    shown: list[Mapping[str, Any]] = []
    hidden: dict[str, None] = {}  # columns --wide has and the default tables left out
    always: dict[str, bool] = {}  # timeouts, errors: 0 in every repeat of every scenario?
    for scenario in dict.fromkeys(str(cell.get("scenario")) for cell in cells):
        group = [cell for cell in cells if str(cell.get("scenario")) == scenario]
        ratios = {
            (e.get("candidate"), params_key(e.get("params"))): e
            for e in comparisons
            if e.get("metric") == metric and str(e.get("scenario")) == scenario
        }
        shown += ratios.values()
        zero = [name for name in TRAILING_METRICS if name in columns and always_zero(group, name)]
        kept = [name for name in columns if name not in zero]
        against = baseline if metric and any(c.get("strategy") == baseline for c in group) else None
        build = partial(scenario_table, scenario, group, units, headings, ratios, against)
        if wide:
            table = fitting_table(partial(build, kept), console)
        else:
            reported = [n for n in kept if any(cell_summary(c).get(n) for c in group)]
            candidates = fitted_candidates(reported, headline, units)
            required = [metric] if metric in candidates else candidates[:1]
            table, chosen = fitted_table(build, candidates, required, console)
            hidden.update(dict.fromkeys(name for name in kept if name not in chosen))
        console.print(table)
        if zero and wide:
            console.print(Text(f"{' and '.join(zero)}: 0 in every repeat", style="dim"))
        for name in TRAILING_METRICS:
            if name in columns:
                always[name] = always.get(name, True) and name in zero
        for line in _failure_lines(group, varying_params(group)):
            console.print(line)
    zero_everywhere = [name for name, zero in always.items() if zero]
    if zero_everywhere and not wide:
        console.print(Text(f"{' and '.join(zero_everywhere)}: 0 in every repeat", style="dim"))
    if hidden:
        names = ", ".join(labels.get(name, name) for name in hidden)
        console.print(
            Text(
                f"{len(hidden)} more column{'s' if len(hidden) > 1 else ''} ({names}) and "
                "the p-values: --wide, report.html, --json",
                style="dim",
            )
        )
    varying = varying_params(cells)
    cpu = cpu_notes(comparisons, metric, labels, varying)
    if wide:
        probes = probe_notes(cells, named_probes(doc))
        unstable = stability_notes(cells, labels)
    else:
        probes = probe_summary(cells, named_probes(doc))
        unstable = stability_summary(cells, labels)
        what = labels.get(str(metric), str(metric))
        cpu = grouped(
            cpu,
            f"CPU per op tells {len(cpu)} cells from the baseline where {what} does not: "
            "see report.html",
        )
    for note in notes(shown) + probes:
        console.print(Text(note, style="yellow"))
    for note in cpu:
        console.print(Text(note, style="cyan"))
    for note in unstable:
        console.print(Text(note, style="magenta"))
    overhead = overhead_table(doc)
    if overhead is not None:
        console.print(overhead)
    cost = bpfstats.footer(cells)
    if cost is not None:
        console.print(Text(cost, style="dim"))
    explain = explain_footer(doc)
    if explain is not None:
        console.print(Text(explain, style="dim"))
    console.print(_legend(summaries, metric, labels))
