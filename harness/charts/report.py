"""The charts report.html and summary.md open with, drawn from run.json alone, one pair per
scenario, `<run>/charts/<scenario>.<kind>.png` (report_charts lists them, run.py draws them):

- `ratios`: each strategy's ratio to the baseline with its 95% bootstrap interval, a row per
  strategy and swept parameter, a panel per metric: the headline one (ops/s unless the
  workload marks others) and CPU per op of each role; a significant ratio (Mann-Whitney
  p < 0.05) is a filled marker coloured by its verdict (green better, red worse) and starred,
  an insignificant one a hollow grey marker;
- `latency`: HdrHistogram-style percentile plot, latency against percentile on a
  log(1/(1-p)) axis from 50% to 99.99%, a line per strategy (and parameter) through the
  medians over the repeats of the percentiles the workload reports (`latency_ns.p50`, `p90`,
  `p99`, `p999`, `p9999`), log latency axis.

Both fit a report page 1,280 px wide: the ratio panels wrap, two to a row, and the latency
legend stands beside the plot, never on its lines. Each chart is also written as SVG (the
report's "open" link), its legend and plot areas marked by id (`legend`, `plot-area-N`).
A drawer returns False, and writes nothing, when it has nothing to draw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from harness.charts.figures import pyplot, save
from harness.format.numbers import TIMES
from harness.profiles.cells import slug
from harness.stats import flatten_metrics

DPI = 100

# Percentile fields of latency_ns, with their percentile.
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9), ("p9999", 99.99))
VERDICT_COLOURS = {"better": "tab:green", "worse": "tab:red", "changed": "tab:orange"}


# Ratio panels side by side at most: 2 x 4.2 in + the row labels fit 1,280 px at 100 dpi.
PANELS_A_ROW = 2
# Latency legend entries a column before it takes a second one.
LEGEND_ROWS = 20


@dataclass(frozen=True)
class Chart:
    scenario: str
    kind: str  # "ratios" or "latency"
    path: str  # the PNG, relative to the run directory
    title: str

    @property
    def vector(self) -> str:
        """The same chart as SVG."""
        return str(Path(self.path).with_suffix(".svg"))


def report_charts(doc: Mapping[str, Any]) -> list[Chart]:
    """The charts the reports open with, in their order: per scenario its ratios to the
    baseline (a run with one), then its latency percentiles. write_charts draws those that
    have something to draw; the others have no file."""
    baseline = (doc.get("config") or {}).get("baseline")
    charts: list[Chart] = []
    for scenario in dict.fromkeys(str(c.get("scenario")) for c in doc.get("cells") or []):
        name = slug(scenario)
        if baseline:
            title = f"{scenario}: ratio to {baseline}"
            charts.append(Chart(scenario, "ratios", f"charts/{name}.ratios.png", title))
        title = f"{scenario}: latency percentiles"
        charts.append(Chart(scenario, "latency", f"charts/{name}.latency.png", title))
    return charts


def _mark_ids(fig: Any) -> None:
    """The SVG's legend and plot areas marked by id."""
    for i, ax in enumerate(fig.axes):
        ax.patch.set_gid(f"plot-area-{i}")
        legend = ax.get_legend()
        if legend is not None:
            legend.set_gid("legend")


def _row_label(entry: Mapping[str, Any], varying: Sequence[str], baseline: str) -> str:
    """The candidate and its varying params, and `vs <twin>` when it is compared with its
    twin rather than the baseline."""
    params = entry.get("params") or {}
    shown = " ".join(f"{k}={params[k]}" for k in varying if k in params)
    against = entry.get("baseline")
    twin = f"vs {against}" if against is not None and against != baseline else ""
    return " ".join(filter(None, [str(entry.get("candidate")), shown, twin]))


def draw_ratios(
    scenario: str,
    entries: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    labels: Mapping[str, str],
    baseline: str,
    varying: Sequence[str],
    path: Path,
) -> bool:
    from matplotlib.ticker import FuncFormatter  # matplotlib: only when drawing

    rows = list(dict.fromkeys(_row_label(e, varying, baseline) for e in entries))
    if not rows or not metrics:
        return False
    columns = min(len(metrics), PANELS_A_ROW)
    panel_rows = math.ceil(len(metrics) / columns)
    height = 0.45 * len(rows) + 1.6
    fig, axes = pyplot().subplots(
        panel_rows,
        columns,
        figsize=(4.2 * columns + 1.5, height * panel_rows),
        squeeze=False,
        sharey=True,
    )
    panels = [ax for row in axes for ax in row]
    for ax in panels[len(metrics) :]:
        ax.remove()  # an odd panel out
    for ax, metric in zip(panels, metrics, strict=False):
        for e in entries:
            if e.get("metric") != metric or e.get("ratio") is None:
                continue
            y = rows.index(_row_label(e, varying, baseline))
            ratio = float(e["ratio"])
            low, high = e.get("ci95_low"), e.get("ci95_high")
            if low is not None and high is not None:
                ax.plot(
                    [float(low), float(high)], [y, y], color="0.35", lw=2, solid_capstyle="butt"
                )
            if e.get("significant"):
                colour = VERDICT_COLOURS.get(str(e.get("verdict")), "tab:blue")
                ax.plot([ratio], [y], "o", color=colour, ms=8)
                ax.annotate(
                    "*", (ratio, y), xytext=(5, 2), textcoords="offset points", color=colour
                )
            else:
                ax.plot([ratio], [y], "o", mfc="white", mec="0.4", ms=7)
        ax.axvline(1.0, color="0.6", ls="--", lw=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.3g}{TIMES}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:.3g}"))
        ax.tick_params(axis="x", which="minor", labelsize="x-small")
        ax.set_title(f"{labels.get(metric, metric)} vs {baseline}")
        ax.set_xlabel("ratio to the baseline (log)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0][0].set_yticks(range(len(rows)), rows)
    axes[0][0].invert_yaxis()
    fig.tight_layout()
    twins = any(e.get("baseline") not in (None, baseline) for e in entries)
    against = f"{baseline} (or the twin named)" if twins else baseline
    fig.suptitle(
        f"{scenario}: ratio to {against}, 95% interval; filled * = significant (p < 0.05)",
        y=1.0 + 0.35 / (height * panel_rows),
    )
    _mark_ids(fig)
    save(fig, path, DPI, svg=True)
    return True


def _percentile_x(p: float) -> float:
    return math.log10(1.0 / (1.0 - p / 100.0))


def draw_latency(
    scenario: str, cells: Sequence[Mapping[str, Any]], varying: Sequence[str], path: Path
) -> bool:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    drawn = False
    for cell in cells:
        flat = [flatten_metrics(r) for r in cell.get("repeats") or []]
        xs, ys = [], []
        for field, p in PERCENTILES:
            values = [f[f"latency_ns.{field}"] for f in flat if f.get(f"latency_ns.{field}", 0) > 0]
            if values:
                xs.append(_percentile_x(p))
                ys.append(median(values) / 1e6)
        if len(xs) < 2:
            continue
        params = cell.get("params") or {}
        shown = " ".join(f"{k}={params[k]}" for k in varying if k in params)
        ax.plot(
            xs, ys, marker="o", label=" ".join(filter(None, [str(cell.get("strategy")), shown]))
        )
        drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ticks = [p for _, p in PERCENTILES]
    ax.set_xticks([_percentile_x(p) for p in ticks], [f"{p:g}%" for p in ticks])
    ax.set_yscale("log")
    ax.set_xlabel("percentile (log 1/(1-p))")
    ax.set_ylabel("latency (ms, log)")
    ax.set_title(f"{scenario}: latency by percentile (median of the repeats)")
    ax.grid(True, which="both", alpha=0.3)
    # Beside the plot, not on it: a legend of 18 lines inside the axes covers the data.
    ax.legend(
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        ncol=math.ceil(len(ax.get_lines()) / LEGEND_ROWS),
    )
    fig.set_figheight(max(4.5, 0.19 * min(len(ax.get_lines()), LEGEND_ROWS) + 0.8))
    _mark_ids(fig)
    save(fig, path, DPI, svg=True)
    return True
