"""A run.json nested too deeply (past Python's recursion limit) is one line naming it, and the
rest goes on: `history import` imports the runs after it, `harness bench` and `harness run`
estimate their start-up from another run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import one_repeat, run_harness, runs_dir
from historyruns import harness, night, run_ids
from plans import printed_plan

pytestmark = pytest.mark.unit

# 100,000 nested arrays: past Python's recursion limit for json.loads.
DEEP = "[" * 100_000


@pytest.mark.parametrize("head", ['{"cells":', '{"status": "running", "cells":'])
def test_a_deeply_nested_run_json_is_refused_and_the_runs_after_it_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], head: str
) -> None:
    first = night(tmp_path / "runs", 0)
    bad = tmp_path / "runs" / "20250101T120000Z-deep"
    bad.mkdir()
    (bad / "run.json").write_text(head + DEEP)
    last = night(tmp_path / "runs", 1)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    code, out, err = harness(
        ["history", "import", "--db", url, *map(str, (first, bad, last))], capsys
    )
    assert code == 2
    assert err.count("\n") == 1 and f"{bad / 'run.json'}: " in err and "nested" in err, err
    assert "2 imported" in out and "1 refused" in out
    assert run_ids(url, capsys) == [first.name, last.name]


def test_a_deeply_nested_running_run_json_does_not_stop_a_run_or_its_estimate(
    harness_env: dict[str, str],
) -> None:
    done = run_harness(["bench", "--quick", "--probes", "none"], harness_env)
    assert done.returncode == 0, done.stderr
    (good,) = runs_dir(harness_env).iterdir()
    # Newer by name than any run: the estimate reads it first.
    bad = runs_dir(harness_env) / "99991231T235959Z-deep" / "run.json"
    bad.parent.mkdir()
    bad.write_text('{"status": "running", "cells":' + DEEP)

    plan = run_harness(["bench", "--plan"], harness_env)
    assert plan.returncode == 0, plan.stderr
    rows, _ = printed_plan(plan.stdout)
    assert rows["sleepy"].startup.endswith(f"(run {good.name})"), plan.stdout
    assert plan.stderr.count("\n") == 1 and f"skipped {bad}: " in plan.stderr, plan.stderr

    done = run_harness([*one_repeat("fast"), "--param", "rate=64"], harness_env)
    assert done.returncode == 0, done.stderr
    assert f"skipped {bad}: " in done.stderr and "Traceback" not in done.stderr
    assert len(list(runs_dir(harness_env).iterdir())) == 3


def test_the_nightly_import_names_an_unreadable_run_and_imports_the_others_and_version_1(
    harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`history import` without RUN_DIRs (make bench, the nightly): a corrupt run.json under
    results/runs is named, night after night, without failing the import; a run.json of an
    older harness (schema_version 1) is read and imported."""
    runs = runs_dir(harness_env)
    first, old = night(runs, 0), night(runs, 1)
    doc = json.loads((old / "run.json").read_text())
    doc["metrics"][0]["description"] = "version 1 kept every key of the declaration"
    (old / "run.json").write_text(json.dumps(doc | {"schema_version": 1}))
    corrupt = runs / "20250102T120000Z-abc1234" / "run.json"
    corrupt.parent.mkdir()
    corrupt.write_text('{"schema_version": 2, "cells": [')
    for imported in ("2 imported", "0 imported"):
        code, out, err = harness(["history", "import"], capsys)
        assert code == 0, err
        assert err.startswith(f"harness: refused: cannot read {corrupt}: not valid JSON")
        assert err.count("\n") == 1
        assert f"{imported}," in out and "1 refused" in out, out
    assert run_ids(default_db(harness_env), capsys) == [first.name, old.name]
    # Named on the command line, a refused run is the import's failure.
    code, _, err = harness(["history", "import", str(corrupt.parent)], capsys)
    assert code == 2 and str(corrupt) in err


def default_db(env: dict[str, str]) -> str:
    return f"sqlite:///{Path(env['HARNESS_RESULTS']) / 'history.sqlite'}"
