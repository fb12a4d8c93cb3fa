import io
import re
from typing import Any

import pytest
import rundocs
from conftest import assert_holds, line_with
from rich.console import Console
from timerscells import TIMERS_METRICS, TIMERS_STRATEGIES, timers_metrics, timers_result

from harness.format.numbers import human, human_ratio, join_range
from harness.rundoc.model import RunDoc
from harness.stats import compare_cells, summarize_cell
from harness.tables import print_run

pytestmark = pytest.mark.unit

METRICS = timers_metrics("ops_per_sec", "latency_ns.p99")
SPREAD = (1.0, 0.99, 1.01, 0.98, 1.02)  # medians land exactly on the given value


def ascii_text(text: str) -> str:
    """The en dash and multiplication sign as - and x, so expectations stay plain ASCII."""
    return text.replace("\N{EN DASH}", "-").replace("\N{MULTIPLICATION SIGN}", "x")


def cell(
    strategy: str,
    ops: float,
    p99_ns: float,
    *,
    scenario: str = "steady",
    concurrency: int = 4096,
    timeouts: int = 0,
    failures: int = 0,
    repeats: int = 5,
) -> dict[str, Any]:
    results = [
        {
            "event": "result",
            "strategy": strategy,
            "scenario": scenario,
            "params": {"concurrency": concurrency, "mode": "write"},
            "ops_per_sec": ops * f,
            "latency_ns": {"p50": p99_ns / 5 * f, "p99": p99_ns * f},
            "timeouts": timeouts,
            "errors": 0,
        }
        for f in SPREAD[:repeats]
    ]
    return {
        "id": f"{strategy}/{scenario}/{concurrency}",
        "strategy": strategy,
        "scenario": scenario,
        "params": {"concurrency": concurrency, "mode": "write"},
        "resolved_params": {"concurrency": concurrency, "mode": "write"},
        "repeats": results,
        "failures": [
            {
                "repeat": repeats + i,
                "exit_code": 1,
                "error": "error: server exited with 137",
                "stderr_tail": [],
                "elapsed_s": 1.0,
            }
            for i in range(failures)
        ],
        "summary": summarize_cell(results),
        "probes": {},
        "profile": {},
    }


def run_doc(cells: list[dict[str, Any]], status: str = "complete") -> dict[str, Any]:
    return {
        "schema_version": 2,
        "run_id": "20250101T000000Z-abc1234",
        "suite": "timers",
        "status": status,
        "started_at": "2025-01-01T00:00:00Z",
        "finished_at": "2025-01-01T00:10:00Z",
        "git": {"commit": "abc1234def567890", "dirty": False},
        "host": {
            "hostname": "bench1",
            "kernel": "6.8.0",
            "cpu_model": "AMD EPYC 7313P 16-Core Processor",
            "logical_cpus": 32,
            "governor": "performance",
            "smt": True,
            "isolated_cpus": [],
            "turbo": False,
        },
        "config": rundocs.config(repeats=5, duration_s=10.0, warmup_s=2.0),
        "metrics": METRICS,
        "cells": cells,
        "comparisons": compare_cells(cells, "none", METRICS),
        "plots": [],
    }


def pr564_run(status: str = "complete") -> dict[str, Any]:
    """The three figures of scylla-rust-driver PR #564, at two concurrencies."""
    return run_doc(
        [
            cell("none", 1_858_276, 2_100_000),
            cell("tokio-timeout", 549_900, 9_800_000, timeouts=3),
            cell("deadline-tracker", 1_866_452, 2_050_000, failures=1, repeats=4),
            cell("none", 1_500_000, 400_000, concurrency=64),
            cell("tokio-timeout", 900_000, 1_000_000, concurrency=64),
        ],
        status,
    )


def typed(doc: dict[str, Any]) -> RunDoc:
    return RunDoc.model_validate(doc)


def render(doc: dict[str, Any], width: int, wide: bool = False) -> str:
    console = Console(record=True, width=width, file=io.StringIO())
    print_run(typed(doc), console, wide=wide)
    return ascii_text(console.export_text())


@pytest.mark.parametrize(
    ("value", "time_ns", "expected"),
    [
        (1_858_276, False, "1.86M"),
        (549_900, False, "549.9k"),
        (999_960, False, "1.00M"),
        (42_000, False, "42.0k"),
        (3, False, "3"),
        (2.5, False, "2.50"),
        (0, False, "0"),
        (850, True, "850ns"),
        (412_300, True, "412.3µs"),
        (1_240_000, True, "1.24ms"),
        (2_500_000_000, True, "2.50s"),
    ],
)
def test_human(value: float, time_ns: bool, expected: str) -> None:
    assert human(float(value), time_ns) == expected


def test_join_range_and_ratio() -> None:
    assert ascii_text(join_range(human(1_840_000), human(1_880_000))) == "1.84-1.88M"
    assert ascii_text(join_range(human(980_000), human(1_020_000))) == "980.0k-1.02M"
    low, high = human(394_100, True, compact=True), human(406_600, True, compact=True)
    assert ascii_text(join_range(low, high)) == "394-407µs"
    assert ascii_text(human_ratio(3.3794)) == "3.38x"
    assert ascii_text(human_ratio(12.34)) == "12.3x"


def test_wide_table_has_figures_intervals_ratio_mark_and_legend() -> None:
    text = render(pr564_run(), 160, wide=True)
    assert max(len(line) for line in text.splitlines()) <= 160
    assert "scenario steady" in text
    assert "concurrency" in text  # varies across cells
    assert "mode" not in text.split("scenario steady")[1]  # constant, so no column
    none_row = next(line for line in text.splitlines() if line.strip().startswith("none"))
    # n=5: [min-max]
    assert_holds(none_row, "1.86M [1.82-1.90M]", "2.10ms [2.06-2.14ms]", "baseline")
    tokio_row = line_with(text, "tokio-timeout")
    # The ops/s, its ratio to none, the p-value, the timeouts, the repeats.
    assert_holds(
        tokio_row, "549.9k [538.9-560.9k]", "0.30x * [0.29-0.30]", "0.0079", "3 [3-3]", "5/5"
    )
    tracker_row = line_with(text, "deadline-tracker")
    assert "4/5" in tracker_row
    assert " * " not in tracker_row  # 1.00x is not a significant change
    assert (
        "failed: deadline-tracker concurrency=4096 repeat 4 (exit 1): error: server exited with 137"
        in text
    )
    assert "errors: 0 in every repeat" in text
    assert "95% interval of the median" in text
    assert "Mann-Whitney U" in text
    assert "n=5: the interval is [min-max] and covers the median with 93.8% only" in text
    assert "n=4: the interval is [min-max]" in text


def test_wide_at_100_columns_spreads_figures_over_lines_without_truncating() -> None:
    text = render(pr564_run(), 100, wide=True)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "…" not in text
    lines = text.splitlines()
    tokio = next(i for i, line in enumerate(lines) if line.strip().startswith("tokio-timeout"))
    assert "549.9k" in lines[tokio] and "0.30x *" in lines[tokio]
    assert "539-561k" in lines[tokio + 1]  # the interval goes below the median
    assert "p=0.0079" in lines[tokio + 2]
    assert "4/5 runs" in text  # a cell lost a repeat, so run counts are shown


def test_not_a_terminal_gives_plain_text() -> None:
    out = io.StringIO()
    print_run(typed(pr564_run()), Console(file=out, width=120))
    assert "\x1b[" not in out.getvalue()
    assert "1.86M" in out.getvalue()


def test_colour_terminal_marks_significance() -> None:
    out = io.StringIO()
    print_run(typed(pr564_run()), Console(file=out, width=160, force_terminal=True))
    assert "\x1b[" in out.getvalue()


@pytest.mark.parametrize(
    ("status", "expected"),
    [("partial", "some repeats failed"), ("interrupted", "stopped early"), ("failed", "no cell")],
)
def test_status_line_for_unfinished_runs(status: str, expected: str) -> None:
    assert f"status {status}: " in render(pr564_run(status), 160)
    assert expected in render(pr564_run(status), 160)


def test_complete_run_has_no_status_line() -> None:
    assert "status complete:" not in render(pr564_run(), 160)


def test_failed_cell_and_missing_comparisons_are_shown() -> None:
    doc = pr564_run()
    dead = cell("hashed-wheel", 1.0, 1.0, failures=5, repeats=0)
    doc["cells"].append(dead)
    doc["comparisons"] = compare_cells(doc["cells"], "none", METRICS)  # none for the dead one
    text = render(doc, 160, wide=True)
    dead_row = line_with(text, "hashed-wheel")
    assert "0/5" in dead_row
    assert "0.30x *" in text
    assert "… and 2 more failures of hashed-wheel" in text


def test_one_table_per_scenario_and_small_n_note() -> None:
    doc = pr564_run()
    doc["cells"] += [
        cell("none", 1_000_000, 1_000_000, scenario="slow-tail", repeats=3),
        cell("tokio-timeout", 500_000, 5_000_000, scenario="slow-tail", repeats=3),
    ]
    doc["comparisons"] = compare_cells(doc["cells"], "none", METRICS)
    text = render(doc, 160)
    assert "scenario steady" in text and "scenario slow-tail" in text
    assert "note (tokio-timeout concurrency=4096 mode=write): 3 vs 3 repeats: the smallest" in text
    slow = text.split("scenario slow-tail")[1]
    assert "concurrency" not in slow.splitlines()[2]  # one concurrency in this scenario


def test_wide_at_80_columns_stacks_each_interval_end_on_its_own_line() -> None:
    text = render(pr564_run(), 80, wide=True)  # what rich assumes for a pipe
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    lines = text.splitlines()
    tokio = next(i for i, line in enumerate(lines) if line.strip().startswith("tokio-timeout"))
    assert "549.9k" in lines[tokio]
    assert "539k-" in lines[tokio + 1]
    assert "561k" in lines[tokio + 2]


TIMERS_LABELS = (
    "ops/s",
    "p50",
    "p99",
    "client CPU/op",
    "server CPU/op",
    "CPU/op",
    "ctx sw/op",
    "wakeups/op",
    "futex wait/op",
    "off-CPU/op",
    "mutex %",
    "timeouts",
)
UNSTABLE = (1.0, 0.7, 1.3, 1.0)  # stdev 24% of the mean: pyperf's "unstable"


def timers_cell(strategy: str, concurrency: int, k: float) -> dict[str, Any]:
    """A timers cell as `make bench SUITES=timers QUICK=1` records it: 4 repeats, every
    metric, the probes' per-op figures, timeouts in the tokio cells."""
    params = {"concurrency": concurrency, "timeout_ms": 500}
    results = [
        {"strategy": strategy, "scenario": "steady", "params": params}
        | timers_result(strategy, k, f)
        for f in UNSTABLE
    ]
    c = cell(strategy, 1.0, 1.0, concurrency=concurrency)
    c.update(
        id=f"{strategy}/concurrency={concurrency}/timeout_ms=500",
        params={"concurrency": concurrency, "timeout_ms": 500},
        repeats=results,
        summary=summarize_cell(results),
        stability={"ops_per_sec": ["spread: stdev is 26% of the mean (> 10%)"]},
    )
    return c


def timers_run() -> dict[str, Any]:
    cells = [
        timers_cell(strategy, concurrency, 1.0 - 0.05 * i)
        for i, strategy in enumerate(TIMERS_STRATEGIES)
        for concurrency in (16, 256)
    ]
    doc = run_doc(cells)
    doc.update(
        suite="timers",
        metrics=TIMERS_METRICS,
        comparisons=compare_cells(cells, "none", TIMERS_METRICS),
        config=rundocs.config(repeats=4, duration_s=1.0, warmup_s=0.6),
    )
    return doc


def table_rows(text: str, scenario: str = "steady") -> list[str]:
    """The lines of a scenario's table under its heading rule, up to the blank line."""
    lines = text.split(f"scenario {scenario}")[1].splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    body = lines[rule + 1 :]
    return body[: next(i for i, line in enumerate(body) if not line.strip())]


def test_the_default_timers_table_fits_100_columns_a_line_a_row() -> None:
    text = render(timers_run(), 100)
    assert max(len(line) for line in text.splitlines()) <= 100
    rows = table_rows(text)
    # One line a row: 18 cells, 18 lines, each starting with its strategy.
    assert len(rows) == 18
    assert [row.split()[0] for row in rows] == [s for s in TIMERS_STRATEGIES for _ in (16, 256)]
    none = rows[0].split()
    assert none[1:5] == ["16", "715.3k", "[501-930k]", "158.2µs"]  # whole, with the interval
    assert none[-1] == "baseline"
    # Every figure whole: a number with its unit, an interval in brackets, a ratio, a mark.
    figure = r"(\d+(\.\d+)?(k|M|ns|us|ms|s|%|x)?|\[[\d.kMnums%-]+\]|\*|baseline)"
    for row in rows:
        for token in row.split()[1:]:
            assert re.fullmatch(figure, token.replace("µ", "u")), (token, row)
    header = text.split("scenario steady")[1].splitlines()[2]
    assert {"strategy", "concurrency", "ops/s", "vs", "none"} <= set(header.split())


def test_the_default_table_names_what_it_left_out_and_wide_has_every_column() -> None:
    narrow = render(timers_run(), 100)
    shown = narrow.split("scenario steady")[1].splitlines()[2]
    # The footer wraps at 100 columns: read it without its white space.
    found = re.search(r"(\d+)morecolumns\(([^)]*)\)([^\n]*)", re.sub(r"\s+", "", narrow))
    assert found is not None, narrow
    named = found[2].split(",")
    assert int(found[1]) == len(named) and "timeouts" in named
    for label in TIMERS_LABELS:  # each column either in the table or named under it
        assert (label.replace(" ", "") in named) != (f" {label} " in f" {shown} "), label
    more = found[3]
    assert "--wide" in more
    wide = render(timers_run(), 400, wide=True)
    header = "\n".join(wide.split("scenario steady")[1].splitlines()[1:4])
    for label in (*TIMERS_LABELS, "vs none", "p", "runs"):
        assert f" {label} " in f" {header} ", label
    assert "more columns" not in wide
    tokio = next(row for row in table_rows(wide) if row.split()[0] == "tokio-timeout")
    assert "3 [3-3]" in tokio  # the timeouts, a column of --wide only


def test_the_default_table_groups_the_notes_and_wide_gives_each() -> None:
    doc = timers_run()
    for c, probe in zip(doc["cells"], ("perf", "gc", "offwake", "futex"), strict=False):
        c["probes"] = {
            probe: {"repeats": [{"repeat": 1, "unavailable": f"{probe}: not on this kernel"}]}
        }
    narrow = render(doc, 100)
    assert len([line for line in narrow.splitlines() if line.startswith("unstable")]) == 1
    joined = narrow.replace("\n", " ")
    assert "unstable: 18 of 18 cells (stdev > 10% of the mean in 18): see report.html" in joined
    assert len([line for line in narrow.splitlines() if line.startswith("probe")]) == 1
    assert "probes without full output: perf unavailable (1 of 18 cells), gc unavailable" in (
        joined
    )
    assert "not on this kernel" not in narrow  # the reasons are in the report
    wide = render(doc, 400, wide=True)
    assert len([line for line in wide.splitlines() if line.startswith("unstable (")]) == 18
    assert len([line for line in wide.splitlines() if line.startswith("probe ")]) == 4


def test_window_totals_are_labelled_as_such() -> None:
    """tokenbucket's shard min/max count tokens over the window: not beside tokens/s as if
    they were rates."""
    metrics = [
        {"name": "tokens_per_sec", "unit": "tokens/s", "headline": True, "label": "tokens/s"},
        {"name": "shard_tokens_min", "unit": "tokens", "headline": True, "label": "shard min"},
    ]
    results = [
        {"event": "result", "tokens_per_sec": 962_200.0 * f, "shard_tokens_min": 415_400.0 * f}
        for f in SPREAD
    ]
    c = cell("pure", 1.0, 1.0)
    c.update(repeats=results, summary=summarize_cell(results))
    doc = run_doc([c])
    doc.update(metrics=metrics, comparisons=[])
    for text in (render(doc, 100), render(doc, 200, wide=True)):
        header = text.split("scenario steady")[1].splitlines()[2:4]
        assert "shard min" in header[0] and "(window total)" in header[1], header
        assert "tokens/s" in header[1] and "(window total)" not in header[0]
