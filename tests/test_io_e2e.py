"""The io suite through the harness: `harness run io` with both engines (psync and io_uring)
on the scratch file the harness writes in a tmpfs, unlimited and metered by the pure bucket,
with a schema-valid run.json whose figures agree with each other and stay within what was asked
(the bucket's rate, the requests dispatched, the request size); and the iops_limit range's
both ends (the max runs, one more exits 2 before any run directory exists). No wall-clock
rate is expected of a busy 2-core machine: what holds by construction is checked."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import mounted_tmpfs, run_harness, runs_dir
from requirements import need
from rundocs import schema_problems

from harness.paths import REPO_ROOT
from harness.suites import discover

pytestmark = pytest.mark.e2e

WORKLOADS = REPO_ROOT / "workloads"
LIMIT = 2000  # iops_limit of the metered cells
SHARDS = 2
FIBERS = 4  # parallelism per shard
REQSIZE = 4096
WINDOW_S = 0.5
FILE_MB = 4
SCRATCH_MB = 8  # the file and the harness's free-room margin
MAX_IOPS_LIMIT = 100_000_000  # describe's max: 1e11 bucket units/s, far below max_rate


@pytest.fixture
def memory_dir(tmp_path: Path) -> Iterator[Path]:
    """Where the scratch file goes: a tmpfs, whose reads never wait on this VM's disk (its
    virtual disk stalls for longer than a window when the machine is busy; once it gave an
    unlimited cell no completion at all in 0.5 s)."""
    with mounted_tmpfs(tmp_path / "scratch", SCRATCH_MB) as mount:
        yield mount


@pytest.fixture
def io_env(harness_env: dict[str, str]) -> dict[str, str]:
    suite = discover(WORKLOADS)["io"]
    if not suite.built:
        pytest.fail("the io workload is not built: run `make deps`")
    check = [str(suite.binary), "check", "--strategy", "pure", "--duration-s", "1"]
    check += ["--warmup-s", "0", "--param", "ioengine=io_uring"]
    done = subprocess.run(check, capture_output=True, text=True, timeout=60, check=False)
    need(None if done.returncode == 0 else done.stderr.strip())
    return {**harness_env, "HARNESS_WORKLOADS": str(WORKLOADS)}


def _run(env: dict[str, str], scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    common = ["--param", f"file_size_mb={FILE_MB}", "--param", f"dir={scratch}"]
    common += ["--param", f"shards={SHARDS}"]
    common += ["--param", f"parallelism={FIBERS}", "--param", "pin=off"]
    common += ["--duration-s", str(WINDOW_S), "--warmup-s", "0.1", "--repeat", "1"]
    return run_harness(["run", "io", *common, "--probes", "none", *args], env, timeout=600)


def test_both_engines_count_their_requests_and_the_bucket_holds_the_rate(
    io_env: dict[str, str], memory_dir: Path
) -> None:
    done = _run(
        io_env,
        memory_dir,
        *("--strategies", "unlimited,pure", "--scenario", "randread"),
        *("--param", "ioengine=psync", "--param", "ioengine=io_uring"),
        *("--param", f"iops_limit={LIMIT}"),
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(io_env).iterdir()
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    assert schema_problems(doc) == []
    cells = {(c["strategy"], c["params"]["ioengine"]): c for c in doc["cells"]}
    assert set(cells) == {
        (strategy, engine) for strategy in ("unlimited", "pure") for engine in ("psync", "io_uring")
    }
    for (strategy, engine), cell in cells.items():
        what = f"{strategy} {engine}"
        (repeat,) = cell["repeats"]
        assert repeat["params"]["ioengine"] == engine, what
        seconds = repeat["measured_s"]
        assert seconds == pytest.approx(WINDOW_S), what
        completed = repeat["completed"]
        assert sum(repeat["shard_completed"]) == completed, what
        assert len(repeat["shard_completed"]) == SHARDS, what
        assert repeat["iops"] == pytest.approx(completed / seconds), what
        assert repeat["ops_per_sec"] == repeat["iops"], what
        assert repeat["limit_ratio"] == pytest.approx(repeat["iops"] / LIMIT), what
        assert repeat["bw_bytes"] == pytest.approx(completed * REQSIZE / seconds), what
        # What completed in the window was dispatched in it, or was in flight when it began
        # (one request per fiber at most).
        assert completed <= repeat["dispatched"] + SHARDS * FIBERS, what
        lat = repeat["latency_ns"]
        assert lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"], what
        assert repeat["cancelled"] >= 0, what
        if strategy == "pure":
            # The bucket hands out at most the rate over the window plus its fill (1 ms of
            # the rate) and one reservation per shard, whatever the scheduling.
            assert completed <= LIMIT * WINDOW_S * 1.02 + 2 + SHARDS, what
        else:
            # Unmetered, the fibers' requests were counted (a shard that got any CPU in the
            # window completes its in-flight requests at once from the tmpfs).
            assert completed > 0, what
            assert lat["p50"] > 0, what


def test_the_iops_limit_range_is_what_the_bucket_holds(
    io_env: dict[str, str], memory_dir: Path
) -> None:
    """iops_limit's max is 1e8 requests/s = 1e11 bucket units/s (1000 a request), far below
    the bucket's max_rate (2.56e15): it runs, and what completes is the tmpfs's rate
    (limit_ratio well under 1). One more is refused with one line, exit 2."""
    done = _run(
        io_env,
        memory_dir,
        *("--strategies", "pure", "--scenario", "randread"),
        *("--param", f"iops_limit={MAX_IOPS_LIMIT}", "--param", "bucket_ms=10000"),
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(io_env).iterdir()
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    (cell,) = doc["cells"]
    (repeat,) = cell["repeats"]
    assert repeat["params"]["iops_limit"] == MAX_IOPS_LIMIT
    assert 0 < repeat["limit_ratio"] < 1
    assert repeat["iops"] == pytest.approx(repeat["completed"] / repeat["measured_s"])

    bad = run_harness(
        ["run", "io", "--duration-s", "0.2", "--param", f"iops_limit={MAX_IOPS_LIMIT + 1}"],
        io_env,
    )
    assert bad.returncode == 2, bad.stderr
    (line,) = [line for line in bad.stderr.splitlines() if "iops_limit" in line]
    assert f"'{MAX_IOPS_LIMIT + 1}'" in line and f"1..{MAX_IOPS_LIMIT}" in line
    assert len(list(runs_dir(io_env).iterdir())) == 1  # only the first run's directory
