import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import rundocs
from conftest import assert_holds, line_with
from rich.console import Console
from timerscells import TIMERS_METRICS, TIMERS_STRATEGIES, timers_metrics, timers_result

from harness.cli import main
from harness.compare import compare_command
from harness.stats import summarize_cell

pytestmark = pytest.mark.unit

METRICS = timers_metrics("ops_per_sec", "latency_ns.p99")
SPREAD = (1.0, 0.99, 1.01, 0.98, 1.02)


def ascii_text(text: str) -> str:
    """The en dash and multiplication sign as - and x, so expectations stay plain ASCII."""
    return text.replace("\N{EN DASH}", "-").replace("\N{MULTIPLICATION SIGN}", "x")


def cell(
    strategy: str, ops: float, p99_ns: float, concurrency: int = 4096, scenario: str = "steady"
) -> dict[str, Any]:
    return rundocs.cell(
        strategy,
        scenario,
        {"concurrency": concurrency},
        [
            {"event": "result", "ops_per_sec": ops * f, "latency_ns": {"p99": p99_ns * f}}
            for f in SPREAD
        ],
    )


def write_run(path: Path, run_id: str, cells: list[dict[str, Any]], **extra: Any) -> Path:
    doc = rundocs.run(cells, run_id=run_id, metrics=METRICS) | extra
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps(doc))
    return path


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = write_run(
        tmp_path / "a",
        "run-a",
        [
            cell("none", 1_858_276, 2_000_000),
            cell("tokio-timeout", 549_975, 9_000_000),
            cell("deadline-tracker", 1_866_452, 2_000_000),
        ],
    )
    b = write_run(
        tmp_path / "b",
        "run-b",
        [
            cell("none", 1_858_276, 2_000_000),  # the same figures: no change
            cell("tokio-timeout", 1_100_000, 4_500_000),  # 2x ops, half the p99: better
            cell("deadline-tracker", 1_500_000, 2_000_000),  # fewer ops: worse
            cell("hashed-wheel", 1_700_000, 2_000_000),
        ],
    )
    return a, b


def run(a: Path, b: Path, as_json: bool, width: int = 160, wide: bool = False) -> tuple[int, str]:
    console = Console(record=True, width=width, file=io.StringIO())
    code = compare_command(a, b, console, as_json, wide)
    return code, ascii_text(console.export_text())


def test_compare_json_has_ratios_verdicts_and_unmatched_cells(runs: tuple[Path, Path]) -> None:
    code, out = run(*runs, as_json=True)
    assert code == 0
    entries = json.loads(out)
    by_key = {(e["strategy"], e["metric"]): e for e in entries}
    assert len(entries) == 3 * 2 + 1

    tokio_ops = by_key[("tokio-timeout", "ops_per_sec")]
    assert tokio_ops["ratio"] == pytest.approx(1_100_000 / 549_975)
    assert tokio_ops["ci95_low"] < tokio_ops["ratio"] < tokio_ops["ci95_high"]
    assert tokio_ops["p_value"] == pytest.approx(2 / 252)
    assert tokio_ops["verdict"] == "better"
    assert tokio_ops["a"]["median"] == pytest.approx(549_975)
    assert tokio_ops["b"]["n"] == 5
    assert by_key[("tokio-timeout", "latency_ns.p99")]["verdict"] == "better"  # lower is better
    assert by_key[("deadline-tracker", "ops_per_sec")]["verdict"] == "worse"
    unchanged = by_key[("none", "ops_per_sec")]
    assert unchanged["ratio"] == pytest.approx(1.0)
    assert unchanged["significant"] is False
    assert unchanged["verdict"] == "no change"
    only_b = by_key[("hashed-wheel", None)]
    assert only_b["verdict"] == "only in B"
    assert only_b["params"] == {"concurrency": 4096}


def test_compare_table(runs: tuple[Path, Path]) -> None:
    code, out = run(*runs, as_json=False)
    assert code == 0
    tokio = line_with(out, "tokio-timeout")
    ops, p99 = ["2.00x", "*", "[1.94-2.06]"], ["0.50x", "*", "[0.49-0.52]"]
    assert tokio.split() == ["tokio-timeout", *ops, *p99]  # a line, the ratios of B to A
    assert "only in B: hashed-wheel · steady · concurrency=4096" in out


def test_compare_wide_table(runs: tuple[Path, Path]) -> None:
    code, out = run(*runs, as_json=False, wide=True)
    assert code == 0
    assert "A  run-a" in out and "B  run-b" in out
    tokio = line_with(out, "tokio-timeout", "ops")
    assert_holds(tokio, "550.0k [539.0-561.0k]", "1.10M [1.08-1.12M]", "2.00x *", "better")
    tracker = line_with(out, "deadline-tracker")
    assert "worse" in tracker
    assert "only in B: hashed-wheel · steady · concurrency=4096" in out
    assert "Mann-Whitney U" in out


def test_compare_wide_table_fits_100_columns(runs: tuple[Path, Path]) -> None:
    code, out = run(*runs, as_json=False, width=100, wide=True)
    assert code == 0
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "p=0.0079" in out


def test_compare_matches_cells_by_scenario_and_params_and_warns_about_other_hosts(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a", "run-a", [cell("none", 100, 10, concurrency=64)])
    b = write_run(
        tmp_path / "b",
        "run-b",
        [
            cell("none", 100, 10, concurrency=128),
            cell("none", 100, 10, concurrency=64, scenario="slow-tail"),
        ],
        host=rundocs.host(hostname="laptop", logical_cpus=8),
    )
    code, out = run(a, b, as_json=False)
    assert code == 0
    assert "no cell appears in both runs" in out
    assert "only in A: none · steady · concurrency=64" in out
    assert "only in B: none · steady · concurrency=128" in out
    assert "only in B: none · slow-tail · concurrency=64" in out
    assert "the hosts differ in hostname, logical_cpus" in out


def test_compare_reports_too_few_repeats(tmp_path: Path) -> None:
    few = cell("none", 100, 10)
    few["repeats"] = few["repeats"][:3]
    few["summary"] = summarize_cell(few["repeats"])
    a = write_run(tmp_path / "a", "run-a", [few])
    more = cell("none", 300, 10)
    more["repeats"] = more["repeats"][:3]
    more["summary"] = summarize_cell(more["repeats"])
    b = write_run(tmp_path / "b", "run-b", [more])
    entries = json.loads(run(a, b, as_json=True)[1])
    ops = next(e for e in entries if e["metric"] == "ops_per_sec")
    assert ops["p_value"] == pytest.approx(0.1)
    assert ops["significant"] is False
    assert ops["verdict"] == "inconclusive"
    assert "smallest possible p is 0.1" in ops["reason"]
    table = run(a, b, as_json=False)[1]
    assert "note (none concurrency=4096): 3 vs 3 repeats: the smallest possible p is 0.1" in table


def test_compare_accepts_the_run_json_file_itself(runs: tuple[Path, Path]) -> None:
    a, b = runs
    code, out = run(a / "run.json", b / "run.json", as_json=True)
    assert code == 0
    assert json.loads(out)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no run here"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"schema_version": 1}', "no list of cells"),
        ('{"schema_version": 9, "cells": []}', "schema_version 9"),
    ],
)
def test_compare_rejects_what_is_not_a_run_with_exit_2(
    tmp_path: Path,
    runs: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    message: str,
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    if content is not None:
        (bad / "run.json").write_text(content)
    code, out = run(runs[0], bad, as_json=False)
    assert code == 2
    assert out == ""
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert message in err


def timers_cell(strategy: str, concurrency: int, k: float) -> dict[str, Any]:
    """A timers cell as `make bench SUITES=timers QUICK=1` records it: every metric, the
    probes' per-op figures, timeouts in the tokio cells; `k` scales it (ops up, times down)."""
    results = [timers_result(strategy, k, f, probe_k=k) for f in SPREAD]
    params = {"concurrency": concurrency, "timeout_ms": 500}
    return rundocs.cell(strategy, "steady", params, results)


@pytest.fixture
def timers_runs(tmp_path: Path) -> tuple[Path, Path]:
    """18 cells in each run; B is 5% slower per strategy down the list (none: unchanged)."""
    runs = []
    for name, step in (("a", 0.0), ("b", 0.05)):
        cells = [
            timers_cell(strategy, concurrency, 1.0 - step * i)
            for i, strategy in enumerate(TIMERS_STRATEGIES)
            for concurrency in (16, 256)
        ]
        runs.append(write_run(tmp_path / name, f"run-{name}", cells, metrics=TIMERS_METRICS))
    return runs[0], runs[1]


def heading_rule(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if line.strip().startswith("─"))


def table_header(text: str) -> list[str]:
    """The words of the table's heading line, above its rule."""
    lines = text.splitlines()
    return lines[heading_rule(lines) - 1].split()


def table_rows(text: str) -> list[str]:
    """The lines of the table under its heading rule, up to the blank line."""
    lines = text.splitlines()
    body = lines[heading_rule(lines) + 1 :]
    return body[: next(i for i, line in enumerate(body) if not line.strip())]


def test_the_default_compare_table_fits_100_columns_a_line_a_cell(
    timers_runs: tuple[Path, Path],
) -> None:
    code, out = run(*timers_runs, as_json=False, width=100)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100
    rows = table_rows(out)
    # One line a row: 18 cells, 18 lines, each starting with its strategy and concurrency.
    assert [row.split()[:2] for row in rows] == [
        [s, c] for s in TIMERS_STRATEGIES for c in ("16", "256")
    ]
    assert table_header(out)[:5] == [
        "strategy",
        "concurrency",
        "ops/s",
        "p50",
        "p99",
    ]  # headline first
    assert "B/A" in out.split("strategy")[0]  # the table's title says what the figures are
    # Every figure whole: a ratio, its significance mark, its interval in brackets.
    figure = r"\d+(\.\d+)?x|\*|\[\d+(\.\d+)?-\d+(\.\d+)?\]"
    for row in rows:
        for token in row.split()[2:]:
            assert re.fullmatch(figure, token), (token, row)
    assert rows[0].split()[2:5] == ["1.00x", "[0.97-1.03]", "1.00x"]  # none: no change
    # deadline-tracker's B is 0.8x A: ops/s 0.80x, p50 and p99 1.25x, each significant.
    assert rows[8].split()[2:][:9] == [
        "0.80x",
        "*",
        "[0.78-0.82]",
        "1.25x",
        "*",
        "[1.21-1.29]",
        "1.25x",
        "*",
        "[1.21-1.29]",
    ]


def test_the_default_compare_table_names_what_it_left_out(
    timers_runs: tuple[Path, Path],
) -> None:
    out = run(*timers_runs, as_json=False, width=100)[1]
    header = " ".join(table_header(out))
    found = re.search(r"(\d+)morecolumns\(([^)]*)\)([^\n]*)", re.sub(r"\s+", "", out))
    assert found is not None, out
    named = found[2].split(",")
    assert int(found[1]) == len(named) and "timeouts" in named and "errors" in named
    labels: tuple[str, ...] = ("ops/s", "p50", "p99", "client CPU/op", "server CPU/op", "CPU/op")
    labels += ("ctx sw/op",)
    labels += ("wakeups/op", "futex wait/op", "off-CPU/op", "mutex %", "timeouts", "errors")
    for label in labels:  # each metric either in the table or named under it
        assert (label.replace(" ", "") in named) != (f" {label} " in f" {header} "), label
    assert "--wide" in found[3]


def test_compare_wide_has_every_column_and_metric(timers_runs: tuple[Path, Path]) -> None:
    code, out = run(*timers_runs, as_json=False, width=200, wide=True)
    assert code == 0
    header = ["strategy", "concurrency", "metric", "A", "B", "B/A", "p", "verdict"]
    assert table_header(out) == header
    metrics = [str(m["name"]) for m in TIMERS_METRICS]
    for strategy in TIMERS_STRATEGIES:
        for concurrency in ("16", "256"):
            shown = {
                row.split()[2]
                for row in out.splitlines()
                if row.split()[:2] == [strategy, concurrency]
            }
            assert shown == set(metrics), (strategy, concurrency)
    assert "more columns" not in out
    tracker = next(
        row for row in out.splitlines() if row.split()[:3] == ["deadline-tracker", "16", "timeouts"]
    )
    assert "0 [0-0]" in tracker
    narrow = run(*timers_runs, as_json=False, width=100, wide=True)[1]
    assert max(len(line) for line in narrow.splitlines()) <= 100  # spread over lines, as before
    for name in metrics:
        assert name in narrow


def test_the_default_compare_output_groups_its_notes_and_wide_gives_each(
    tmp_path: Path, timers_runs: tuple[Path, Path]
) -> None:
    out = run(*timers_runs, as_json=False, width=100)[1]
    graphs = [line for line in out.splitlines() if line.startswith("no differential graph")]
    assert graphs == [
        "no differential graph for 18 cells: no on-CPU profile in A (18); --wide names each"
    ]
    wide = run(*timers_runs, as_json=False, width=200, wide=True)[1]
    graphs = [line for line in wide.splitlines() if line.startswith("no differential graph")]
    assert len(graphs) == 18
    # An old run without the latency and CPU figures, both with 3 repeats: a note on p for
    # ops/s, one on each other metric.
    old = cell("none", 715_300, 10)
    old["repeats"] = [{"event": "result", "ops_per_sec": r["ops_per_sec"]} for r in old["repeats"]]
    new = timers_cell("none", 4096, 1.0)
    for c in (old, new):
        c["params"] = {"concurrency": 4096}
        c["repeats"] = c["repeats"][:3]
        c["summary"] = summarize_cell(c["repeats"])
    a = write_run(tmp_path / "old", "run-a", [old], metrics=TIMERS_METRICS)
    b = write_run(tmp_path / "new", "run-b", [new], metrics=TIMERS_METRICS)
    out = run(a, b, as_json=False, width=100)[1]
    assert not [line for line in out.splitlines() if line.startswith("note")], out
    grouped = re.findall(
        r"^(\d+) notes on missing ratios or p-values \(1 cell\): --wide$", out, re.M
    )
    assert len(grouped) == 1 and int(grouped[0]) > 3, out
    wide = run(a, b, as_json=False, width=200, wide=True)[1]
    assert "note (none concurrency=4096): run A has no values of latency_ns.p50" in wide


def test_harness_compare_fits_columns_and_takes_wide(
    timers_runs: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The verb: the console's width from $COLUMNS, --wide on the command line."""
    monkeypatch.setenv("COLUMNS", "100")
    a, b = (str(path) for path in timers_runs)
    assert main(["compare", a, b]) == 0
    out = ascii_text(capsys.readouterr().out)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert len(table_rows(out)) == 18 and "10 more columns" in out
    assert main(["compare", a, b, "--wide"]) == 0
    wide = ascii_text(capsys.readouterr().out)
    assert max(len(line) for line in wide.splitlines()) <= 100
    assert "more columns" not in wide and "mutex_share" in wide and "p=" in wide


def test_a_differential_graph_path_is_never_broken(
    runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = runs[1] / "compare" / "run-a" / ("tokio-timeout__concurrency=4096" * 3 + ".diff.svg")
    monkeypatch.setattr("harness.compare.diff_runs", lambda *_: ([graph], []))
    out = run(*runs, as_json=False, width=100)[1]
    assert f"differential flame graph (A -> B): {graph}" in out.splitlines()
