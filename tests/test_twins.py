"""A strategy compared with its twin (describe's compare_with) rather than the suite's
baseline: in run.json's cells and comparisons, the table's vs column, the findings, the
reports, the history's points and the dashboard's grid; a run without the twin falls back to
the baseline and says so; a describe naming an unknown twin is refused. The pair fixture
suite: `driver` (950 ops/s) names `driver-bare` (1000 ops/s); the baseline `none` is another
client (5000 ops/s)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from conftest import FIXTURES, OTHERS_RUNNING, line_with, run_harness
from historyruns import harness
from sqlalchemy import select

from harness.history.db import MIGRATIONS, connect
from harness.history.schema import points, runs, series
from harness.rundoc.jsonfile import load_run
from harness.stats import compare_cells, summarize_cell

pytestmark = pytest.mark.unit

PAIR = FIXTURES / "twin-suites" / "pair"
WINDOW = ["--repeat", "4", "--duration-s", "0.05", "--warmup-s", "0"]


def ascii_text(text: str) -> str:
    return text.replace("\N{EN DASH}", "-").replace("\N{MULTIPLICATION SIGN}", "x")


def pair_run(env: dict[str, str], *args: str) -> tuple[str, Path]:
    """`harness run PAIR ARGS`: its table (stdout) and its run directory."""
    done = run_harness(["run", str(PAIR), *WINDOW, *args], env)
    assert done.returncode == 0, done.stderr
    said = line_with(done.stdout + done.stderr, "run directory: ")
    return ascii_text(done.stdout), Path(said.split("run directory: ", 1)[1])


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The harness's environment for the module's runs, under one temporary folder."""
    root = tmp_path_factory.mktemp("twins")
    values = {
        "HARNESS_PROBES": "none",
        "HARNESS_WORKLOADS": str(FIXTURES),
        "HARNESS_RESULTS": str(root / "results"),
        "HARNESS_LOCK": str(root / "harness.lock"),
        "COLUMNS": "160",
    }
    yield {k: v for k, v in os.environ.items() if k != "HARNESS_SUITES_PATH"} | values


@pytest.fixture(scope="module")
def twinned(env: dict[str, str]) -> tuple[str, Path]:
    """All three strategies: driver against driver-bare, driver-bare against none."""
    return pair_run(env)


@pytest.fixture(scope="module")
def twinless(env: dict[str, str]) -> tuple[str, Path]:
    """driver and none: driver's twin is not in the run."""
    return pair_run(env, "--strategies", "driver,none")


def test_run_json_records_each_cell_s_baseline(twinned: tuple[str, Path]) -> None:
    _, run_dir = twinned
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["config"]["baseline"] == "none"
    assert doc["config"]["compare_with"] == {"driver": "driver-bare"}
    assert {c["strategy"]: c.get("baseline") for c in doc["cells"]} == {
        "none": None,
        "driver": "driver-bare",
        "driver-bare": "none",
    }
    assert "baseline" not in next(c for c in doc["cells"] if c["strategy"] == "none")
    against = {e["candidate"]: e["baseline"] for e in doc["comparisons"]}
    assert against == {"driver": "driver-bare", "driver-bare": "none"}
    driver = next(e for e in doc["comparisons"] if e["candidate"] == "driver")
    assert driver["ratio"] == pytest.approx(0.95, abs=0.005)


def test_a_run_without_the_twin_compares_with_the_baseline(twinless: tuple[str, Path]) -> None:
    _, run_dir = twinless
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["config"]["compare_with"] == {"driver": "driver-bare"}
    assert {c["strategy"]: c.get("baseline") for c in doc["cells"]} == {
        "driver": "none",
        "none": None,
    }
    assert {e["candidate"]: e["baseline"] for e in doc["comparisons"]} == {"driver": "none"}


def test_a_describe_naming_an_unknown_twin_is_refused_in_one_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    done = run_harness(
        ["run", str(PAIR), *WINDOW], env | {"PAIR_TWIN": "ghost", "HARNESS_RESULTS": str(results)}
    )
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith(OTHERS_RUNNING)]
    assert done.returncode == 1 and done.stdout == ""
    assert lines == [
        f"harness: error: `{PAIR / 'pair.py'} describe` broke the workload contract: "
        "strategies[1].compare_with: unknown strategy 'ghost' (valid: none, driver, driver-bare)"
    ]
    assert not results.exists()


def test_compare_cells_takes_each_cell_s_baseline_and_older_cells_the_run_s() -> None:
    def cell(strategy: str, ops: float, baseline: str | None = None) -> dict[str, Any]:
        repeats = [{"ops_per_sec": ops * f} for f in (1.0, 0.99, 1.01, 0.98)]
        recorded = {"baseline": baseline} if baseline else {}
        return {
            "strategy": strategy,
            "scenario": "steady",
            "params": {},
            "repeats": repeats,
            "summary": summarize_cell(repeats),
        } | recorded

    metric = [{"name": "ops_per_sec", "better": "higher"}]
    twinned = [cell("none", 5000), cell("driver", 950, "driver-bare"), cell("driver-bare", 1000)]
    entries = compare_cells(twinned, "none", metric)
    assert [(e["candidate"], e["baseline"]) for e in entries] == [
        ("driver", "driver-bare"),
        ("driver-bare", "none"),
    ]
    assert entries[0]["ratio"] == pytest.approx(0.95)
    # A run.json from before cells recorded their baseline: every other strategy vs the run's.
    older = [cell("none", 5000), cell("driver", 950), cell("driver-bare", 1000)]
    entries = compare_cells(older, "none", metric)
    assert [(e["candidate"], e["baseline"]) for e in entries] == [
        ("driver", "none"),
        ("driver-bare", "none"),
    ]


def test_an_older_run_json_without_cell_baselines_reads_as_compared_with_the_baseline(
    twinned: tuple[str, Path], tmp_path: Path
) -> None:
    doc = json.loads((twinned[1] / "run.json").read_text())
    del doc["config"]["compare_with"]
    for cell in doc["cells"]:
        cell.pop("baseline", None)
    (tmp_path / "run.json").write_text(json.dumps(doc))
    run = load_run(tmp_path / "run.json")
    assert {c.strategy: run.baseline_of(c) for c in run.cells} == {
        "none": None,
        "driver": "none",
        "driver-bare": "none",
    }


def test_the_table_compares_the_driver_with_its_twin(twinned: tuple[str, Path]) -> None:
    table, _ = twinned
    assert "vs none" in table
    driver = line_with(table, " driver ")
    assert "0.95x *" in driver and driver.rstrip().endswith("\N{DAGGER}"), table
    bare = line_with(table, "driver-bare")
    assert "0.20x *" in bare and "\N{DAGGER}" not in bare, table
    assert line_with(table, " none ", "k [").rstrip().endswith("baseline")
    assert "\N{DAGGER} against its twin, not none: driver vs driver-bare" in table
    assert "to the baseline (to the strategy's twin where marked \N{DAGGER})" in table  # legend
    assert "is compared with none, not" not in table


def test_the_findings_and_the_reports_use_the_twin(twinned: tuple[str, Path]) -> None:
    _, run_dir = twinned
    summary = ascii_text((run_dir / "summary.md").read_text())
    assert "- `driver`: 0.95x the ops/s of `driver-bare` (its twin) [95% CI" in summary
    assert "- `driver-bare`: 0.20x the ops/s of `none` [95% CI" in summary
    assert "the ops/s of `driver` " not in summary  # the best against the worst: said already
    assert "`driver` vs `driver-bare`" in summary  # what was run: the twins
    row = next(line for line in summary.splitlines() if line.startswith("| `driver` |"))
    assert "0.95x \\*" in row and "\N{DAGGER}" in row
    html = (run_dir / "report.html").read_text()
    assert "<h3>Compared with driver-bare (its twin)</h3>" in html
    assert "<h3>Compared with none</h3>" in html
    assert "against its twin, not none: driver vs driver-bare" in html


def test_the_table_and_the_summary_say_when_the_twin_is_not_in_the_run(
    twinless: tuple[str, Path],
) -> None:
    table, run_dir = twinless
    driver = line_with(table, " driver ")
    assert "0.19x *" in driver and "\N{DAGGER}" not in driver
    note = (
        "note: driver is compared with none, not compared with its twin driver-bare: the run "
        "has no driver-bare cells (--strategies driver,driver-bare,...)"
    )
    assert note in table.replace("\n", " ")
    assert "twin where marked" not in table  # no row is, so the legend does not say it
    summary = ascii_text((run_dir / "summary.md").read_text())
    assert "- `driver`: 0.19x the ops/s of `none` [95% CI" in summary
    assert "> note: driver is compared with none, not compared with its twin" in summary


def test_the_dashboard_grid_takes_each_cell_s_baseline_from_the_history(
    twinned: tuple[str, Path],
    twinless: tuple[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The twinned run, then the twinless: the driver's latest cell is compared with none,
    driver-bare's (stale: from the first run) with none, and in a history of the first run
    alone the driver's with driver-bare."""
    db = f"sqlite:///{tmp_path / 'history.sqlite'}"

    def grid(*run_dirs: Path) -> dict[str, dict[str, Any]]:
        code, _, err = harness(["history", "import", "--db", db, *map(str, run_dirs)], capsys)
        assert code == 0, err
        out = tmp_path / "site"
        code, _, err = harness(["dashboard", "--db", db, "--out", str(out)], capsys)
        assert code == 0, err
        (script,) = (out / "data").glob("suite-*.js")  # the one suite of the one machine
        text = script.read_text()
        data = json.loads(text[text.index("{") : text.rindex("}") + 1])
        assert data["baseline"] == "none"
        return {c["strategy"]: c for c in data["cells"] if c["metric"] == "ops_per_sec"}

    first = grid(twinned[1])
    driver = first["driver"]
    assert driver["base_strategy"] == "driver-bare"
    assert driver["base"] == first["driver-bare"]["latest"]
    assert driver["latest"] / driver["base"] == pytest.approx(0.95, abs=0.005)
    assert first["driver-bare"]["base_strategy"] == "none"
    assert first["none"]["base_strategy"] == "none"  # itself: compared with nothing
    second = grid(twinless[1])
    assert second["driver"]["base_strategy"] == "none"
    assert second["driver"]["latest"] / second["driver"]["base"] == pytest.approx(0.19, abs=0.005)


def before_point_baselines() -> str:
    """The revision before the migration that adds points.baseline."""
    (migration,) = (MIGRATIONS / "versions").glob("*_point_baseline.py")
    found = re.search(r'^down_revision = "(\w+)"$', migration.read_text(), re.MULTILINE)
    assert found is not None
    return found[1]


def test_the_history_migration_fills_the_baseline_of_older_points(
    twinned: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A history from before points.baseline (downgraded to the revision before it) upgraded
    again: its points were compared with their run's baseline, but the baseline's own (runs
    had no twins then: the driver's point says none, where its import said driver-bare)."""
    db = f"sqlite:///{tmp_path / 'history.sqlite'}"
    code, _, err = harness(["history", "import", "--db", db, str(twinned[1])], capsys)
    assert code == 0, err
    query = select(series.c.strategy, points.c.baseline, runs.c.baseline).join(
        series, series.c.id == points.c.series_id
    )

    def stored() -> set[tuple[str, str | None, str]]:
        with connect(db).connect() as conn:  # connect() upgrades it
            return {(s, b, r) for s, b, r in conn.execute(query.join(runs))}

    assert stored() == {  # as the run compared them
        ("none", None, "none"),
        ("driver", "driver-bare", "none"),
        ("driver-bare", "none", "none"),
    }
    engine = connect(db)
    with engine.connect() as conn, conn.begin():
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.downgrade(config, before_point_baselines())
    engine.dispose()
    assert stored() == {
        ("none", None, "none"),
        ("driver", "none", "none"),
        ("driver-bare", "none", "none"),
    }
