"""The minimum detectable change (harness/history/power.py) against the detector it models:
the real detector, on series with that noise, flags the step min_detectable names in about
POWER of them and a smaller one in fewer; a series' noise is read back from its runs; and
series_power reads an imported history."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from historyruns import harness, write_night

from harness.history import events, importer, power
from harness.history.db import connect
from harness.history.detection import (
    MIN_NOISE,
    RunFigures,
    floor_of_changes,
    newest_changes,
    series_changes,
)
from harness.history.power import HISTORY, POWER, Noise, min_detectable, noise_of, series_power

pytestmark = pytest.mark.unit

SEEDS = 200


def _runs(
    rng: np.random.Generator, noise: Noise, repeats: int, count: int, step: float
) -> list[RunFigures]:
    """`count` runs, from run HISTORY on at (1 + step) times the level before."""
    out = []
    for index in range(count):
        level = (1 + (noise.between or 0) * rng.standard_normal()) * (
            1 + (step if index >= HISTORY else 0)
        )
        values = level * (1 + (noise.within or 0) * rng.standard_normal(repeats))
        out.append(RunFigures(float(np.median(values)), [float(v) for v in values]))
    return out


def _flagged(noise: Noise, repeats: int, nights: int, step: float) -> float:
    """The share of SEEDS series (half the steps up, half down) whose step the real detector
    flags at its run within `nights` nights."""
    hits = 0
    for seed in range(SEEDS):
        sign = 1 if seed % 2 == 0 else -1
        runs = _runs(
            np.random.default_rng(5000 + seed), noise, repeats, HISTORY + nights, sign * step
        )
        found = newest_changes(runs, HISTORY) if nights == 1 else series_changes(runs)
        hits += any(c.index == HISTORY and np.sign(c.change) == sign for c in found)
    return hits / SEEDS


@pytest.mark.parametrize(
    ("within", "between", "repeats"), [(0.01, 0.0, 5), (0.01, 0.005, 5), (0.03, 0.01, 10)]
)
@pytest.mark.parametrize("nights", [1, 3])
def test_the_detector_flags_the_minimum_detectable_step_in_power_of_series(
    within: float, between: float, repeats: int, nights: int
) -> None:
    """At its minimum detectable change the real detector (newest-run test the night it
    lands; with E-Divisive after three nights) flags 80% of 200 series, give or take 2.5
    standard errors of a share (0.07); at 70% of it, at most 65%."""
    noise = Noise(within, between)
    step = min_detectable(noise, repeats, nights)
    assert step is not None
    assert abs(_flagged(noise, repeats, nights, step) - POWER) <= 0.07
    assert _flagged(noise, repeats, nights, 0.7 * step) <= 0.65


def test_more_repeats_and_more_nights_detect_smaller_steps_and_noise_larger_ones() -> None:
    noise = Noise(0.02, 0.005)
    night5, night10 = min_detectable(noise, 5, 1), min_detectable(noise, 10, 1)
    later5 = min_detectable(noise, 5, 3)
    noisier = min_detectable(Noise(0.04, 0.005), 5, 1)
    assert night5 and night10 and later5 and noisier
    assert night10 < night5 and later5 < night5 and noisier > night5


def test_a_quiet_series_is_held_to_the_one_percent_floor() -> None:
    step = min_detectable(Noise(0.0, 0.0), 5, 1)
    assert step is not None and MIN_NOISE <= step < 1.05 * MIN_NOISE


def test_below_five_repeats_the_night_cannot_flag_but_three_nights_can() -> None:
    """Mann-Whitney cannot reach p < 0.01 with four repeats a side; E-Divisive reads medians."""
    noise = Noise(0.01, 0.002)
    assert min_detectable(noise, 4, 1) is None
    assert min_detectable(noise, 1, 3) is not None


def test_an_unknown_noise_has_no_minimum_detectable_change() -> None:
    assert min_detectable(Noise(0.01, None), 5, 1) is None
    with pytest.raises(ValueError):
        min_detectable(Noise(0.01, 0.0), 5, 0)


def test_noise_is_read_back_from_runs_of_known_noise() -> None:
    """31 runs of 10 repeats, 3% within and 2% between: each figure within 25% of it."""
    rng = np.random.default_rng(11)
    runs = _runs(rng, Noise(0.03, 0.02), 10, HISTORY, 0.0)
    noise = noise_of([r.median for r in runs], [r.samples for r in runs])
    assert noise.within is not None and abs(noise.within / 0.03 - 1) < 0.25
    assert noise.between is not None and abs(noise.between / 0.02 - 1) < 0.25


def test_noise_between_needs_three_runs_and_a_step_is_not_noise() -> None:
    flat = [[100.0, 101.0, 99.0]] * 2
    assert noise_of([100.0, 100.0], flat).between is None
    # A 20% step halfway through 31 otherwise identical runs: one change of 20% in 30.
    medians = [100.0] * 15 + [120.0] * 16
    noise = noise_of(medians, [[m] for m in medians])
    assert noise.within is None
    assert noise.between is not None and noise.between == pytest.approx(math.sqrt(0.04 / 30 / 2))


def test_floor_of_changes_is_the_detectors_rule_row_by_row() -> None:
    rng = np.random.default_rng(3)
    for size in (5, 6, 30):
        changes = np.abs(rng.standard_normal((40, size))) * 0.02
        q1, q3 = np.percentile(changes, [25, 75], axis=-1)
        expected = np.maximum(MIN_NOISE, q3 + 3 * (q3 - q1))
        assert np.allclose(floor_of_changes(changes), expected, rtol=0, atol=1e-15)


def test_series_power_reads_the_imported_history(tmp_path: Path) -> None:
    """Four nights of two cells (5 repeats, 1% noise around a flat level): each series with
    its runs, repeats, a within noise near 1% and minimum detectable changes."""
    rng = np.random.default_rng(2)
    levels = {("none", 64): 1000.0, ("tokio-timeout", 64): 800.0}
    dirs = [write_night(tmp_path / "runs", n, levels, rng) for n in range(4)]
    engine = connect(f"sqlite:///{tmp_path / 'h.sqlite'}", create=True)
    importer.import_runs(engine, dirs)
    events.refresh_pending(engine)
    with engine.connect() as conn:
        found = series_power(conn)
        assert series_power(conn, suite="nothing") == []
    assert [(p.strategy, p.metric) for p in found] == [
        ("none", "ops_per_sec"),
        ("tokio-timeout", "ops_per_sec"),
    ]
    for item in found:
        assert (item.suite, item.scenario, item.params) == (
            "timers",
            "steady",
            {"concurrency": "64"},
        )
        assert (item.runs, item.repeats) == (4, 5)
        assert item.noise.within is not None and 0.005 < item.noise.within < 0.02
        assert item.noise.between is not None
        night, later = item.min_detectable.night, item.min_detectable.three_nights
        assert night is not None and later is not None and MIN_NOISE <= later <= night < 0.2
        assert item.min_detectable == power.MinDetectable(
            min_detectable(item.noise, 5, 1), min_detectable(item.noise, 5, 3)
        )


def test_history_power_prints_a_table_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a row a line
    rng = np.random.default_rng(4)
    levels = {("none", 64): 1000.0, ("tokio", 64): 900.0}
    dirs = [str(write_night(tmp_path / "runs", n, levels, rng)) for n in range(3)]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    code, _, err = harness(["history", "import", "--db", url, *dirs], capsys)
    assert code == 0, err
    code, out, err = harness(["history", "power", "--db", url, "--json"], capsys)
    assert code == 0, err
    rows = json.loads(out)
    assert [r["strategy"] for r in rows] == ["none", "tokio"]
    first = rows[0]
    assert set(first) >= {"suite", "strategy", "scenario", "params", "metric", "runs", "noise"}
    assert first["params"] == {"concurrency": "64"} and first["runs"] == 3
    within = first["noise"]["within"]
    night = first["min_detectable"]["night"]
    assert 0.003 < within < 0.03 and within < night < 0.5  # fractions, not percents
    code, out, err = harness(["history", "power", "--db", url, "--suite", "timers"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.split()[:4] == ["strategy", "scenario", "params", "metric"] for line in lines)
    row = next(line for line in lines if line.split()[:1] == ["tokio"])
    # concurrency is 64 in both series: no parameter differs, a dash
    assert row.split()[1:6] == ["steady", "\N{EN DASH}", "ops_per_sec", "3", "5"]
    assert f"{100 * night:.1f}%" in next(line for line in lines if line.split()[:1] == ["none"])
    code, out, err = harness(["history", "power", "--db", url, "--metric", "ops_per_sec"], capsys)
    assert code == 0 and out.count("ops_per_sec") == 2
    for option in ("--suite", "--metric"):
        code, out, err = harness(["history", "power", "--db", url, option, "nope"], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "'nope'" in err
