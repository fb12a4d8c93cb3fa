"""run.json: the committed schema is the model's, every run the harness writes satisfies it
(real runs of every suite), the one loader reads them back whole, and refuses other versions
and malformed documents with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import plans
import pytest
from conftest import FIXTURES, run_harness, runs_dir
from rundocs import schema_problems

from harness.describe import describe
from harness.hostinfo import collect_host, git_info
from harness.paths import REPO_ROOT
from harness.run.recorder import RunRecord
from harness.rundoc import jsonfile
from harness.rundoc.model import SCHEMA_VERSION
from harness.rundoc.schema import SCHEMA_FILE, run_schema, schema_text
from harness.suites import discover

WORKLOADS = REPO_ROOT / "workloads"
DOC = REPO_ROOT / "docs" / "run-json.md"
SHORT = ["--duration-s", "0.1", "--warmup-s", "0"]


@pytest.mark.unit
def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), "run `make schema` and commit the file"
    assert run_schema()["properties"]["schema_version"]["const"] == SCHEMA_VERSION


def schema_keys(node: Any, defs: dict[str, Any]) -> set[str]:
    """Every object key the schema names, at any depth."""
    keys: set[str] = set()
    if isinstance(node, dict):
        if "$ref" in node:
            return schema_keys(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        for key, value in (node.get("properties") or {}).items():
            keys |= {key} | schema_keys(value, defs)
        for key in ("items", "additionalProperties", "anyOf"):
            inner = node.get(key)
            for part in inner if isinstance(inner, list) else [inner]:
                keys |= schema_keys(part, defs)
    return keys


@pytest.mark.unit
def test_the_doc_names_every_key_and_the_schema_file() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    text = DOC.read_text()
    undocumented = sorted(k for k in schema_keys(schema, schema["$defs"]) if f"`{k}`" not in text)
    assert undocumented == []
    assert "docs/run.schema.json" in text
    assert "## Versions" in text and f"| {SCHEMA_VERSION} |" in text


def written(run_dir: Path) -> dict[str, Any]:
    """run.json of a finished run: it satisfies the schema, and the loader reads it whole."""
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    assert schema_problems(doc) == []
    assert jsonfile.as_json(jsonfile.load_run(run_dir)) == doc
    return doc


def the_run(env: dict[str, str], args: list[str], expect: int = 0) -> dict[str, Any]:
    done = run_harness(args, env, timeout=600)
    assert done.returncode == expect, done.stderr
    (run_dir,) = runs_dir(env).iterdir()
    return written(run_dir)


def created(out_dir: Path, strategies: list[str], sweep: dict[str, list[object]]) -> RunRecord:
    """A sleepy run as the runner starts it: run.json written, nothing run yet."""
    suite = discover(FIXTURES)["sleepy"]
    plan = plans.plan(suite, describe(suite), strategies=strategies, sweep=sweep)
    git, host = git_info(REPO_ROOT), collect_host()
    return RunRecord.create(out_dir, plan, git=git, host=host, command=["harness", "run"])


@pytest.mark.unit
def test_a_run_in_progress_satisfies_the_schema(tmp_path: Path) -> None:
    record = created(tmp_path, ["slow", "fast"], {"rate": [100, 300]})
    doc = written(record.run_dir)
    assert doc["status"] == "running" and doc["finished_at"] is None
    assert [c["profile"] for c in doc["cells"]] == [{}] * 4


@pytest.mark.unit
def test_sleepy_runs_satisfy_the_schema(harness_env: dict[str, str]) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast,liar", "--scenario", "steady,burst"]
    doc = the_run(harness_env, [*args, "--param", "rate=100", "--param", "rate=300", *SHORT], 1)
    assert doc["status"] == "partial"
    assert all(c["failures"] for c in doc["cells"] if c["strategy"] == "liar")
    assert {c["scenario"] for c in doc["comparisons"]} == {"steady", "burst"}


@pytest.mark.bpf
def test_sleepy_runs_with_probes_and_their_overhead_satisfy_the_schema(
    harness_env: dict[str, str],
) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast", "--repeat", "2", "--probe-overhead"]
    doc = the_run(harness_env, [*args, "--probes", "sched,oncpu,gc", *SHORT])
    # oncpu is explain-only: the measurement set is sched+gc, the explain set all.
    assert set(doc["probe_overhead"]) == {"sched", "oncpu", "gc", "sched+gc", "all"}
    for cell in doc["cells"]:
        assert set(cell["probe_variants"]) == {"none", "sched", "oncpu", "gc", "all"}
        assert set(cell["probes"]) == {"sched", "oncpu", "gc"}


def suite_env(harness_env: dict[str, str], name: str) -> dict[str, str]:
    suite = discover(WORKLOADS)[name]
    if not suite.built:
        pytest.fail(f"the {name} workload {suite.binary} is not built: run `make deps`")
    return {**harness_env, "HARNESS_WORKLOADS": str(WORKLOADS)}


@pytest.mark.e2e
@pytest.mark.bpf
def test_a_timers_run_with_every_probe_satisfies_the_schema(harness_env: dict[str, str]) -> None:
    args = ["run", "timers", "--strategies", "none,tokio-timeout", "--param", "concurrency=64"]
    args += ["--probes", "all,bt:bpf/syscalls_per_op.bt", "--repeat", "2"]
    doc = the_run(suite_env(harness_env, "timers"), [*args, "--duration-s", "0.5"])
    assert doc["status"] == "complete"
    assert {name for c in doc["cells"] for name in c["probes"]} == {
        "sched",
        "futex",
        "gc",
        "oncpu",
        "offwake",
        "perfstat",
        "bt:syscalls_per_op",
    }


@pytest.mark.e2e
@pytest.mark.bpf
def test_a_pools_run_with_plots_satisfies_the_schema(harness_env: dict[str, str]) -> None:
    args = ["run", "pools", "--scenario", "uncontended-no-settings", "--duration-s", "1"]
    doc = the_run(suite_env(harness_env, "pools"), [*args, "--repeat", "1", "--probes", "gc"])
    assert doc["status"] == "complete"
    assert {p["kind"] for p in doc["plots"]} == {"wait", "per_conn"}


@pytest.fixture
def version_1_run(harness_env: dict[str, str]) -> Path:
    done = run_harness(
        ["run", "sleepy", "--strategies", "slow", "--repeat", "1", *SHORT], harness_env
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(harness_env).iterdir()
    doc = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps(doc | {"schema_version": 1}))
    return run_dir


@pytest.mark.unit
def test_a_run_json_of_version_1_is_read_as_version_2(
    harness_env: dict[str, str], version_1_run: Path
) -> None:
    doc = json.loads((version_1_run / "run.json").read_text())
    # Version 1 kept every key of a metric's declaration; version 2 only the model's.
    doc["metrics"][0]["description"] = "as the workload declared it"
    (version_1_run / "run.json").write_text(json.dumps(doc))
    assert jsonfile.load_run(version_1_run).schema_version == 2
    for args in (
        ["report", str(version_1_run)],
        ["compare", str(version_1_run), str(version_1_run)],
    ):
        done = run_harness(args, harness_env)
        assert done.returncode == 0, done.stderr


@pytest.mark.unit
@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d["cells"][0].update(colour="red"), "cells[0].colour: Extra inputs are not"),
        (lambda d: d["cells"][0].update(repeats="many"), "cells[0].repeats: Input should be a"),
        (lambda d: d.update(status="done"), "status: Input should be 'running', 'complete'"),
        (lambda d: d["config"].pop("baseline"), "config.baseline: Field required"),
    ],
)
def test_a_malformed_run_json_is_refused_naming_the_key(
    tmp_path: Path, change: Any, problem: str
) -> None:
    record = created(tmp_path, ["slow"], {})
    doc = json.loads(record.path.read_text())
    change(doc)
    record.path.write_text(json.dumps(doc))
    assert schema_problems(doc) != []
    with pytest.raises(jsonfile.RunLoadError) as error:
        jsonfile.load_run(record.run_dir)
    message = str(error.value)
    assert message.startswith(f"{record.path}: not a valid run.json: {problem}")
    assert "\n" not in message


@pytest.mark.unit
def test_no_unit_test_carries_another_tier() -> None:
    """`pytest -m unit` runs without privilege and without built workloads: a test that needs
    them (e2e, bpf, browser) must not be selected by it, e.g. through a module-wide mark."""
    select = ["-m", "unit and (e2e or bpf or browser)", str(REPO_ROOT / "tests")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *select],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    both = [line for line in done.stdout.splitlines() if "::" in line]
    assert both == [] and done.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, done.stdout
