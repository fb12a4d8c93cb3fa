"""scripts/io-vs-fio compares the dispatcher with fio on fio's job: by default io-bench gets
`idle_poll_us=0 submit=each` (it waits for completions in io_uring_enter and enters each
request as it is dispatched, as fio does, where seastar's defaults busy-poll first and enter a
poll's requests together), and an empty IO_PARAMS runs seastar's defaults; stderr says
which."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from requirements import need, tool_problem

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.e2e

SCRIPT = REPO_ROOT / "scripts" / "io-vs-fio"
IO_BENCH = REPO_ROOT / "workloads" / "target" / "release" / "io-bench"


@pytest.mark.parametrize(
    ("io_params", "named"),
    [
        (None, "idle_poll_us=0 submit=each"),
        ("", "none (seastar's defaults)"),
        ("idle_poll_us=200 seed=3", "idle_poll_us=200 seed=3"),
    ],
)
def test_io_bench_waits_as_fio_does_unless_told(
    tmp_path: Path, io_params: str | None, named: str
) -> None:
    need(tool_problem("fio", "fio"))
    if not IO_BENCH.is_file():
        pytest.fail(f"{IO_BENCH} is not built: run `make deps`")
    env = {k: v for k, v in os.environ.items() if k != "IO_PARAMS"}
    env |= {"SIZE_MB": "4", "SECONDS_PER_RUN": "1", "PARALLELISM": "2"}
    if io_params is not None:
        env["IO_PARAMS"] = io_params
    argv = [str(SCRIPT), "psync", "0", "1", str(tmp_path / "scratch")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"io-vs-fio: io-bench parameters beyond the job's: {named}\n"
    assert re.search(r"median io/fio over 1 rounds: [\d.]+\n$", done.stdout), done.stdout
