"""The bisection's explanation: runs of the last good and the first bad build with the sched,
on-CPU, futex and off-wake probes, a finding in a run's words (CPU per op, the frames that grew,
the scheduling and wait figures) and the differential flame graph between them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bisectrepo import make_repo
from conftest import run_harness
from requirements import need

from harness.probes.availability import perf_problem, privilege_problem
from harness.profiles import inferno

pytestmark = pytest.mark.bpf


def test_the_first_bad_commit_is_explained(tmp_path: Path, harness_env: dict[str, str]) -> None:
    need(privilege_problem() or perf_problem())
    if problem := inferno.problem():
        pytest.fail(f"{problem}: `make deps` installs it")
    repo = tmp_path / "repo"
    # Longer repeats than test_bisect.py's, so that the on-CPU profile has samples.
    # The search tries hashes[2] (bad), then hashes[1] (good): the candidate slot then holds
    # the last good build, and only the first bad one is built again for the explanation.
    hashes = make_repo(repo, [3000, 3000, 30000, 30000, 30000])
    done = run_harness(
        ["bisect", str(repo / "bench"), "--good", hashes[0], "--bad", hashes[-1],
         "--rounds", "6", "--max-rounds", "6", "--duration-s", "0.1", "--warmup-s", "0",
         "--explain-repeats", "2", "--json"],
        harness_env,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["first_bad"] == hashes[2], done.stderr
    assert [s["commit"] for s in doc["steps"]] == [hashes[2], hashes[1]]
    assert [(b["commit"], b["slot"]) for b in doc["builds"]][-1] == (hashes[2], "good")
    assert len(doc["builds"]) == 2 + 2 + 1  # the ends, the steps, the first bad again
    assert doc["finding"].startswith("CPU per op "), doc["finding"]
    assert "95% CI" in doc["finding"] and "top growth" in doc["finding"]
    for figure in ("off-CPU per op", "wake-ups per op", "context switches per op",
                   "run-queue wait per op", "futex wait per op"):  # fmt: skip
        assert f"; {figure} " in doc["finding"], doc["finding"]
    for side in ("last_good", "first_bad"):
        graphs = doc["why_graphs"][side]
        assert {"oncpu", "offwake"} <= set(graphs), graphs
        assert all(Path(path).is_file() for path in graphs.values())
    graph = Path(doc["diff_flamegraph"])
    assert graph.is_file() and graph.read_text().lstrip().startswith("<?xml")
    assert graph.is_relative_to(Path(doc["folder"]))
    assert f"bisect: why: {doc['finding']}" in done.stderr
