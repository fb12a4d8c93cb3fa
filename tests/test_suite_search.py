"""Suites from anywhere: `harness run PATH`, HARNESS_SUITES_PATH after the workloads folder,
shadowed names, and docs/adding-a-suite.md's example suite run both ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_harness
from readme_example import write_example
from rundocs import RUN_KEYS, schema_problems

from harness.catalog import find_suites
from harness.cli import main

pytestmark = pytest.mark.e2e

MORE_SUITES = FIXTURES / "more-suites"


def run_json(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = run_harness([*args, "--json"], env, timeout=300)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def assert_complete(doc: dict[str, Any], strategies: list[str], repeats: int) -> None:
    """Every repeat of every cell succeeded and was summarised and compared, in a run.json
    that satisfies the schema in the repo."""
    assert doc.keys() >= RUN_KEYS
    assert schema_problems(doc) == []
    assert doc["status"] == "complete"
    assert sorted({c["strategy"] for c in doc["cells"]}) == sorted(strategies)
    for cell in doc["cells"]:
        assert cell["failures"] == []
        assert len(cell["repeats"]) == repeats
        assert all(r["ops_per_sec"] > 0 for r in cell["repeats"])
        assert cell["summary"]["ops_per_sec"]["n"] == repeats
    baseline = doc["config"]["baseline"]
    compared = {c["candidate"] for c in doc["comparisons"] if c["metric"] == "ops_per_sec"}
    assert compared == set(strategies) - {baseline}


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """docs/adding-a-suite.md's example suite, as the page shows it, in a folder of suites."""
    return write_example(tmp_path / "suites")


def test_the_readme_example_runs_by_the_path_of_its_folder(
    example: Path, harness_env: dict[str, str]
) -> None:
    args = ["run", str(example), "--duration-s", "0.2", "--warmup-s", "0", "--repeat", "2"]
    doc = run_json([*args, "--param", "n=100", "--param", "n=1e3"], harness_env)
    assert doc["suite"] == "sumbench"
    assert doc["config"]["binary"] == str(example / "sumbench.py")
    assert_complete(doc, ["sum", "fsum", "reduce"], repeats=2)
    assert sorted({c["params"]["n"] for c in doc["cells"]}) == [100, 1000]
    run_dirs = list((Path(harness_env["HARNESS_RESULTS"]) / "runs").iterdir())
    assert [json.loads((d / "run.json").read_text()) for d in run_dirs] == [doc]


def test_the_readme_example_runs_by_name_from_harness_suites_path(
    example: Path, harness_env: dict[str, str]
) -> None:
    env = {**harness_env, "HARNESS_SUITES_PATH": str(example.parent)}
    done = run_harness(["list", "--json"], env)
    assert done.returncode == 0, done.stderr
    listed = {e["name"]: e for e in json.loads(done.stdout)}
    assert listed["sumbench"]["folder"] == str(example)
    assert [s["name"] for s in listed["sumbench"]["strategies"]] == ["sum", "fsum", "reduce"]
    doc = run_json(
        ["run", "sumbench", "--duration-s", "0.2", "--warmup-s", "0", "--repeat", "2"], env
    )
    assert doc["config"]["binary"] == str(example / "sumbench.py")
    assert_complete(doc, ["sum", "fsum", "reduce"], repeats=2)


def test_workloads_come_first_then_the_path_in_order(harness_env: dict[str, str]) -> None:
    # HARNESS_WORKLOADS (the fixtures) replaces workloads/: no timers, no pools.
    env = {**harness_env, "HARNESS_SUITES_PATH": f":{MORE_SUITES}::"}
    done = run_harness(["list", "--json"], env)
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)
    assert [(e["name"], e["folder"]) for e in entries] == [
        ("sleepy", str(FIXTURES / "sleepy")),
        ("jsmaps", str(MORE_SUITES / "jsmaps")),
    ]
    done = run_harness(["list"], env)
    assert f"folder: {MORE_SUITES / 'jsmaps'}" in done.stdout


def shadow_copy(root: Path) -> Path:
    """A second suite named sleepy, in a folder of suites `root`."""
    folder = root / "sleepy-copy"
    folder.mkdir(parents=True)
    (folder / "sleepy.py").symlink_to(FIXTURES / "sleepy" / "sleepy.py")
    (folder / "suite.toml").write_text(
        'name = "sleepy"\ndescription = "a copy"\nbinary = "sleepy.py"\nbaseline = "slow"\n'
    )
    return folder


def test_the_first_suite_of_a_name_wins_and_list_names_the_shadowed_one(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    copy = shadow_copy(tmp_path / "more")
    env = {**harness_env, "HARNESS_SUITES_PATH": str(tmp_path / "more")}
    done = run_harness(["list", "--json"], env)
    assert done.returncode == 0, done.stderr
    first, hidden = json.loads(done.stdout)
    assert (first["folder"], first["status"], first["shadowed_by"]) == (
        str(FIXTURES / "sleepy"),
        "ok",
        None,
    )
    assert hidden["folder"] == str(copy) and hidden["shadowed_by"] == str(FIXTURES / "sleepy")
    assert hidden["status"] == (
        f"shadowed by {FIXTURES / 'sleepy'}; run it by its path: harness run {copy}"
    )
    assert "shadowed by" in run_harness(["list"], env).stdout
    short = ["--strategies", "slow", "--repeat", "1", "--duration-s", "0.05", "--warmup-s", "0"]
    by_name = run_json(["run", "sleepy", *short], env)
    assert by_name["config"]["binary"] == str(FIXTURES / "sleepy" / "sleepy.py")
    by_path = run_json(["run", str(copy), *short], env)
    assert by_path["config"]["binary"] == str(copy / "sleepy.py")


def test_a_folder_reached_twice_is_not_its_own_shadow() -> None:
    catalog = find_suites(FIXTURES, [FIXTURES, MORE_SUITES])
    assert list(catalog.suites) == ["sleepy", "jsmaps"] and catalog.shadowed == ()


def test_build_and_bench_take_suites_by_path_and_from_the_search_path(
    harness_env: dict[str, str],
) -> None:
    env = {**harness_env, "HARNESS_SUITES_PATH": str(MORE_SUITES)}
    done = run_harness(["build", "--suites", "jsmaps"], env)
    assert done.returncode == 0, done.stderr
    assert "harness: building suite 'jsmaps': node --check jsmaps.js" in done.stderr
    done = run_harness(["bench", "--suites", str(MORE_SUITES / "jsmaps")], harness_env)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (Path(harness_env["HARNESS_RESULTS"]) / "runs").iterdir()
    assert str(run_dir) in done.stdout
    assert_complete(json.loads((run_dir / "run.json").read_text()), ["object", "map"], 2)


@pytest.mark.parametrize(
    ("args", "path_env", "message"),
    [
        (["run", "./no-such-suite"], None, "suite folder {cwd}/no-such-suite does not exist"),
        (["run", "plain"], None, "{cwd}/plain is not a suite folder: it has no suite.toml"),
        (
            ["bench", "--suites", "plain"],
            None,
            "{cwd}/plain is not a suite folder: it has no suite.toml",
        ),
        (["run", "sleepy"], "{cwd}/missing", "HARNESS_SUITES_PATH: {cwd}/missing is not a folder"),
        (["list"], "{cwd}/missing", "HARNESS_SUITES_PATH: {cwd}/missing is not a folder"),
    ],
)
def test_bad_suite_paths_are_one_line_of_bad_input(
    args: list[str],
    path_env: str | None,
    message: str,
    tmp_path: Path,
    harness_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cwd = tmp_path / "cwd"
    (cwd / "plain").mkdir(parents=True)  # an existing folder: its name is a path
    monkeypatch.chdir(cwd)
    if path_env is not None:
        monkeypatch.setenv("HARNESS_SUITES_PATH", path_env.format(cwd=cwd))
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"harness: error: {message.format(cwd=cwd)}\n"
    assert not Path(harness_env["HARNESS_RESULTS"]).exists()


def test_a_name_that_is_also_a_folder_here_runs_that_folder(
    tmp_path: Path, harness_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shadow_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    short = ["--strategies", "slow", "--repeat", "1", "--duration-s", "0.05", "--warmup-s", "0"]
    doc = run_json(["run", "sleepy-copy", *short], harness_env)
    assert doc["config"]["binary"] == str(tmp_path / "sleepy-copy" / "sleepy.py")
