import io
import json
from pathlib import Path
from typing import Any

import pytest
import rundocs
from rich.console import Console

from harness.compare import compare_command
from harness.stats import summarize_cell

pytestmark = pytest.mark.unit

METRICS = [
    {"name": "ops_per_sec", "unit": "ops/s", "better": "higher"},
    {"name": "latency_ns.p99", "unit": "ns", "better": "lower"},
]
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


def run(a: Path, b: Path, as_json: bool, width: int = 160) -> tuple[int, str]:
    console = Console(record=True, width=width, file=io.StringIO())
    code = compare_command(a, b, console, as_json)
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
    assert "A  run-a" in out and "B  run-b" in out
    tokio = next(line for line in out.splitlines() if "tokio-timeout" in line and "ops" in line)
    assert "550.0k [539.0-561.0k]" in tokio
    assert "1.10M [1.08-1.12M]" in tokio
    assert "2.00x *" in tokio
    assert "better" in tokio
    tracker = next(line for line in out.splitlines() if "deadline-tracker" in line)
    assert "worse" in tracker
    assert "only in B: hashed-wheel · steady · concurrency=4096" in out
    assert "Mann-Whitney U" in out


def test_compare_table_fits_100_columns(runs: tuple[Path, Path]) -> None:
    code, out = run(*runs, as_json=False, width=100)
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
