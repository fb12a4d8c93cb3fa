"""The charts report.html and summary.md open with, drawn from run.json alone (matplotlib,
PNG, under `<run>/charts/`), one pair per scenario:

- `<scenario>.ratios.png`: each strategy's ratio to the baseline with its 95% bootstrap
  interval, a row per strategy and swept parameter, a panel per metric: the headline one
  (ops/s unless the workload marks others) and CPU per op of each role; a significant ratio
  (Mann-Whitney p < 0.05) is a filled marker coloured by its verdict (green better, red worse)
  and starred, an insignificant one a hollow grey marker;
- `<scenario>.latency.png`: HdrHistogram-style percentile plot, latency against percentile on
  a log(1/(1-p)) axis from 50% to 99.99%, a line per strategy (and parameter) through the
  medians over the repeats of the percentiles the workload reports (`latency_ns.p50`, `p90`,
  `p99`, `p999`, `p9999`), log latency axis.

Both fit a report page 1,280 px wide: the ratio panels wrap, two to a row, and the latency
legend stands beside the plot, never on its lines. Each chart is also written as SVG (the
report's "open" link), its legend and plot areas marked by id (`legend`, `plot-area-N`).

A chart with nothing to draw is not written. They are redrawn whenever the reports are.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from harness.base.writes import write_atomic
from harness.format.cells import varying_params
from harness.format.metrics import CPU_METRICS, ratio_metric, report_labels
from harness.format.numbers import TIMES
from harness.profiles.cells import slug
from harness.report import data
from harness.stats import flatten_metrics

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
        return vector_path(self.path)


def vector_path(path: str) -> str:
    return str(Path(path).with_suffix(".svg"))


def _save(fig: Any, path: Path) -> None:
    """PNG at `path` and SVG beside it, the legend and plot areas marked by id."""
    for i, ax in enumerate(fig.axes):
        ax.patch.set_gid(f"plot-area-{i}")
        legend = ax.get_legend()
        if legend is not None:
            legend.set_gid("legend")
    path.parent.mkdir(parents=True, exist_ok=True)
    for file, fmt in ((path, "png"), (path.with_suffix(".svg"), "svg")):
        out = io.BytesIO()
        fig.savefig(out, format=fmt, dpi=100, bbox_inches="tight")
        write_atomic(file, out.getvalue())
    plt.close(fig)


def _row_label(entry: Mapping[str, Any], varying: Sequence[str]) -> str:
    params = entry.get("params") or {}
    shown = " ".join(f"{k}={params[k]}" for k in varying if k in params)
    return " ".join(filter(None, [str(entry.get("candidate")), shown]))


def ratio_metrics(doc: Mapping[str, Any], comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """The headline metric, then the CPU-per-op metrics the comparisons have ratios for."""
    columns, _ = data.columns(doc, list(doc.get("cells") or []))
    headline = ratio_metric(doc, columns)
    with_ratio = {str(e.get("metric")) for e in comparisons if e.get("ratio") is not None}
    names = [headline] if headline in with_ratio else []
    return names + [m for m in CPU_METRICS if m in with_ratio and m not in names]


def draw_ratios(
    scenario: str,
    entries: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    labels: Mapping[str, str],
    baseline: str,
    varying: Sequence[str],
    path: Path,
) -> bool:
    rows = list(dict.fromkeys(_row_label(e, varying) for e in entries))
    if not rows or not metrics:
        return False
    columns = min(len(metrics), PANELS_A_ROW)
    panel_rows = math.ceil(len(metrics) / columns)
    height = 0.45 * len(rows) + 1.6
    fig, axes = plt.subplots(
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
            y = rows.index(_row_label(e, varying))
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
    fig.suptitle(
        f"{scenario}: ratio to {baseline}, 95% interval; filled * = significant (p < 0.05)",
        y=1.0 + 0.35 / (height * panel_rows),
    )
    _save(fig, path)
    return True


def _percentile_x(p: float) -> float:
    return math.log10(1.0 / (1.0 - p / 100.0))


def draw_latency(
    scenario: str, cells: Sequence[Mapping[str, Any]], varying: Sequence[str], path: Path
) -> bool:
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
    _save(fig, path)
    return True


def write_charts(doc: Mapping[str, Any], run_dir: Path) -> list[Chart]:
    """Draw every scenario's charts into `<run_dir>/charts/`; returns those drawn."""
    cells = list(doc.get("cells") or [])
    baseline = (doc.get("config") or {}).get("baseline")
    labels = report_labels(doc)
    columns, _ = data.columns(doc, cells)
    comparisons = data.comparisons(doc, ratio_metric(doc, columns))
    metrics = ratio_metrics(doc, comparisons)
    charts: list[Chart] = []
    for scenario, group in data.scenarios(cells).items():
        varying = varying_params(group)
        name = slug(scenario)
        if baseline:
            entries = [e for e in comparisons if str(e.get("scenario")) == scenario]
            rel = f"charts/{name}.ratios.png"
            if draw_ratios(scenario, entries, metrics, labels, baseline, varying, run_dir / rel):
                title = f"{scenario}: ratio to {baseline}"
                charts.append(Chart(scenario, "ratios", rel, title))
        rel = f"charts/{name}.latency.png"
        if draw_latency(scenario, group, varying, run_dir / rel):
            charts.append(Chart(scenario, "latency", rel, f"{scenario}: latency percentiles"))
    return charts
