"""`harness history confirm` with the sleepy fixture suite: a history of nights made from a real
run of it (their levels chosen), then a real confirming run of the newest night's provisional
change, interleaved with its baseline cell. A change the confirming repeats show again opens
its event; one they do not show opens none, and the command says so; their repeats are not
points of the series."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rundocs
from conftest import run_harness, runs_dir, start_harness

from harness.stats import summarize_cell

pytestmark = pytest.mark.unit

NIGHTS = 10
# sleepy's slow strategy reports `rate` ops/s, fast twice that; noise 0.001 makes its
# confirming repeats land where the test puts them.
REAL = {"slow": 1000.0, "fast": 2000.0}
BUDGET_S = "20"  # 2 cells of about 1 s a repeat (the nights' start-up): 10 repeats a cell


def _template(env: dict[str, str]) -> dict[str, Any]:
    """A real run of sleepy's slow and fast at rate 1000, read and then removed."""
    done = run_harness(
        [
            "run",
            "sleepy",
            "--strategies",
            "slow,fast",
            "--param",
            "rate=1000",
            "--param",
            "noise=0.001",
            "--repeat",
            "2",
            "--duration-s",
            "0.05",
            "--warmup-s",
            "0",
        ],
        env,
    )
    assert done.returncode == 0, done.stderr
    (folder,) = runs_dir(env).iterdir()
    doc: dict[str, Any] = json.loads((folder / "run.json").read_text())
    shutil.rmtree(folder)
    return doc


def _nights(env: dict[str, str], fast: list[float], newest: list[float]) -> str:
    """NIGHTS nights with fast at the levels `fast` (1% noise) and slow at its real level,
    then a night whose fast repeats are `newest`; its run id."""
    template = _template(env)
    rng = np.random.default_rng(34)
    run_id = ""
    for night in range(NIGHTS + 1):
        run_id = f"202501{night + 1:02d}T000000Z-abc1234"
        doc = json.loads(json.dumps(template))
        doc |= {
            "run_id": run_id,
            "started_at": f"2025-01-{night + 1:02d}T00:00:00Z",
            "finished_at": f"2025-01-{night + 1:02d}T00:00:10Z",  # 1 s a repeat
        }
        for cell in doc["cells"]:
            if cell["strategy"] == "fast" and night == NIGHTS:
                values = newest
            else:
                level = fast[night] if cell["strategy"] == "fast" else REAL["slow"]
                values = list(level * (1 + 0.01 * rng.standard_normal(5)))
            first = cell["repeats"][0]
            cell["repeats"] = [first | {"ops_per_sec": value} for value in values]
            cell["summary"] = summarize_cell(cell["repeats"])
        folder = runs_dir(env) / run_id
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(doc))
    done = run_harness(["history", "import"], env)
    assert done.returncode == 0, done.stderr
    return run_id


def _regressions(env: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
    done = run_harness(["history", "regressions", "--json"], env)
    return done.returncode, json.loads(done.stdout)


def _confirm(env: dict[str, str]) -> str:
    done = run_harness(["history", "confirm", "--budget-s", BUDGET_S], env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_change_the_confirming_repeats_show_again_opens_its_event(
    harness_env: dict[str, str],
) -> None:
    # fast 2500 for ten nights, then 2000 (sleepy's own level): 20% lower, but one repeat
    # among the old level's keeps the night's repeats from being apart: no event yet.
    newest = _nights(harness_env, [2500.0] * NIGHTS, [2000.0, 1990.0, 2010.0, 2005.0, 2510.0])
    code, found = _regressions(harness_env)
    assert code == 0 and found == [], found

    out = _confirm(harness_env)
    assert "confirm plan: 1 change past the noise floor, 10 repeats a cell" in out, out
    assert "sleepy fast steady" in out and "beside the cell it is compared with" in out, out
    assert "held, event" in out, out
    code, found = _regressions(harness_env)
    assert code == 1, found
    assert [(r["strategy"], r["run_id"]) for r in found] == [("fast", newest)], found

    # The confirming run ran both cells, interleaved: fast, slow, fast, slow...
    log = [json.loads(line) for line in Path(harness_env["SLEEPY_LOG"]).read_text().splitlines()]
    confirming = [entry["strategy"] for entry in log[-20:]]
    assert confirming == ["fast", "slow"] * 10, confirming
    doc = _confirming_run(harness_env)
    assert doc["config"]["confirms"] == newest

    # Confirmed once: the next confirm finds nothing to run.
    again = _confirm(harness_env)
    assert "nothing to run" in again, again


def test_a_change_the_confirming_repeats_do_not_show_is_dropped_and_said(
    harness_env: dict[str, str],
) -> None:
    # fast at its own level for ten nights, then one night 20% lower: the night alone opens
    # an event.
    newest = _nights(harness_env, [2000.0] * NIGHTS, [1600.0, 1590.0, 1610.0, 1605.0, 1595.0])
    code, found = _regressions(harness_env)
    assert code == 1 and [(r["strategy"], r["run_id"]) for r in found] == [("fast", newest)], found
    export = run_harness(["history", "export", "--format", "jsonl"], harness_env)
    points_before = export.stdout.splitlines()

    out = _confirm(harness_env)
    assert "dropped, no event (the change did not hold)" in out, out
    said = r"ops_per_sec: -(19|20)\.\d% the night, [+-]0\.\d% with the confirming repeats"
    assert re.search(said, out), out
    code, found = _regressions(harness_env)
    assert code == 0 and found == [], found
    changes = run_harness(["history", "regressions", "--all", "--json"], harness_env)
    assert json.loads(changes.stdout) == []

    # The confirming repeats are no points: the export, the runs listed are those of before.
    export = run_harness(["history", "export", "--format", "jsonl"], harness_env)
    assert export.stdout.splitlines() == points_before
    listing = run_harness(["history", "list"], harness_env)
    assert len(listing.stdout.splitlines()) == 1 + NIGHTS + 1, listing.stdout
    assert _confirming_run(harness_env)["run_id"] not in listing.stdout


def _confirming_run(env: dict[str, str]) -> dict[str, Any]:
    (folder,) = [p for p in runs_dir(env).iterdir() if not p.name.startswith("2025")]
    doc: dict[str, Any] = json.loads((folder / "run.json").read_text())
    return doc


def test_its_help_and_bad_input(harness_env: dict[str, str]) -> None:
    done = run_harness(["history", "confirm", "--help"], harness_env)
    assert done.returncode == 0, done.stderr
    assert "(default: 10% of the nightly's hour, 360 s," in " ".join(done.stdout.split())
    done = run_harness(["history", "confirm", "--budget-s", "0"], harness_env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "harness: error: --budget-s: expected seconds > 0, got 0\n", done.stderr


def test_a_confirming_run_of_a_run_the_history_lacks_is_refused_by_name(
    harness_env: dict[str, str],
) -> None:
    repeats = [{"ops_per_sec": 1000.0 + i} for i in range(5)]
    doc = rundocs.run(
        [rundocs.cell("fast", "steady", {"rate": 1000}, repeats)],
        suite="sleepy",
        config=rundocs.config(strategies=["fast"], confirms="20250101T000000Z-nosuch"),
    )
    folder = runs_dir(harness_env) / doc["run_id"]
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(doc))
    done = run_harness(["history", "import", str(folder)], harness_env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"harness: refused: {folder}/run.json: it confirms run 20250101T000000Z-nosuch, which "
        "the history does not have on this run's machine (import that run first)\n"
    )


def test_an_interrupted_confirmation_decides_nothing_and_is_run_again(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    """SIGINT during the confirming run's first repeat: exit 130, its run.json says
    interrupted, the history keeps none of its repeats and the night's own verdict stands (no
    event); the next confirm plans the change again."""
    _nights(harness_env, [2500.0] * NIGHTS, [2000.0, 1990.0, 2010.0, 2005.0, 2510.0])
    window = tmp_path / "window"
    proc = start_harness(
        ["history", "confirm", "--budget-s", BUDGET_S],
        {**harness_env, "SLEEPY_WINDOW": str(window)},
        stdout=subprocess.PIPE,
    )
    end = time.monotonic() + 120
    while not window.exists() and time.monotonic() < end:  # the first repeat's window began
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "no confirming repeats (its run did not complete): the night's test: no event" in out
    assert _confirming_run(harness_env)["status"] == "interrupted"
    code, found = _regressions(harness_env)
    assert code == 0 and found == [], found
    again = run_harness(["history", "confirm", "--plan", "--budget-s", BUDGET_S], harness_env)
    assert "confirm plan: 1 change past the noise floor" in again.stdout, again.stdout
