"""One step is one event, whatever night it is seen from: acknowledged the night it lands, it
stays acknowledged and silent on the nights at its new level, while the newest-run test and
then E-Divisive speak for it; and a short history flags it too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from historyruns import harness, write_night

pytestmark = pytest.mark.unit


def nights(root: Path, flat: int, low: int) -> list[Path]:
    """`flat` nights at 1000 ops/s, then `low` at 600 (-40%)."""
    rng = np.random.default_rng(11)
    return [
        write_night(root, n, {("none", 64): 1000.0 if n < flat else 600.0}, rng)
        for n in range(flat + low)
    ]


def regressions(url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any]]:
    code, out, _ = harness(["history", "regressions", "--all", "--json", "--db", url], capsys)
    return code, [(r["event"], r["run_id"], r["status"]) for r in json.loads(out)]


def test_an_acknowledged_step_stays_one_acknowledged_event_on_the_nights_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = nights(tmp_path / "runs", 10, 4)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    harness(["history", "import", "--db", url, *map(str, dirs[:11])], capsys)
    code, found = regressions(url, capsys)
    assert (code, found) == (1, [(1, dirs[10].name, "open")])
    code, _, err = harness(["history", "ack", "1", "--reason", "expected", "--db", url], capsys)
    assert code == 0, err
    for night in dirs[11:]:
        harness(["history", "import", "--db", url, str(night)], capsys)
        assert regressions(url, capsys) == (0, [(1, dirs[10].name, "acknowledged")]), night


@pytest.mark.parametrize(("flat", "low"), [(2, 1), (3, 2), (4, 1), (2, 3)])
def test_a_step_after_two_runs_is_flagged_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flat: int, low: int
) -> None:
    """docs/dashboard.md: two runs before a step are enough to flag it, at its run."""
    dirs = nights(tmp_path / "runs", flat, low)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for night in dirs:  # night by night, as the nightly imports them
        harness(["history", "import", "--db", url, str(night)], capsys)
    code, found = regressions(url, capsys)
    assert (code, [run for _, run, _ in found]) == (1, [dirs[flat].name])
