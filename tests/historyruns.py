"""Run directories for the history tests: a suite's nightly runs with known levels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rundocs import cell, config, run

from harness import cli


def write_night(
    root: Path,
    night: int,
    levels: dict[tuple[str, int], float],
    rng: np.random.Generator,
    **host: Any,
) -> Path:
    """Night `night` of suite timers: one cell per (strategy, concurrency), 5 repeats of
    ops_per_sec around its level with 1% noise."""
    cells = []
    for (strategy, concurrency), level in levels.items():
        repeats = [{"ops_per_sec": level * (1 + 0.01 * rng.standard_normal())} for _ in range(5)]
        flame = f"flame/{len(cells)}.svg"
        cells.append(
            cell(strategy, "steady", {"concurrency": concurrency}, repeats, profile={"svg": flame})
        )
    run_id = f"202501{night + 1:02d}T000000Z-abc1234"
    strategies = sorted({s for s, _ in levels})
    doc = run(
        cells,
        run_id=run_id,
        started_at=f"2025-01-{night + 1:02d}T00:00:00Z",
        finished_at=f"2025-01-{night + 1:02d}T00:10:00Z",
        config=config(strategies=strategies, params={"concurrency": [64]}),
    )
    doc["host"] |= host
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(doc))
    (folder / "report.html").write_text("<!doctype html><title>report</title>")
    (folder / "flame").mkdir()
    for i in range(len(cells)):
        (folder / "flame" / f"{i}.svg").write_text(
            '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
        )
    return folder


def night(root: Path, n: int, cells: int = 1) -> Path:
    """Night `n` with `cells` cells of strategy none, all at 1000 ops/s."""
    levels = {("none", c + 1): 1000.0 for c in range(cells)}
    return write_night(root, n, levels, np.random.default_rng(n))


def harness(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The harness in this process: exit code, stdout, stderr."""
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def run_ids(url: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The run ids `history list` shows for the database at `url`."""
    code, out, err = harness(["history", "list", "--db", url], capsys)
    assert code == 0, err
    return [line.split()[0] for line in out.splitlines()[1:]]
