"""Measurement and explain repeats: the figures come from repeats with the cheap probes only,
the stack and profile probes run on explain repeats of their own, recorded apart with the
perturbation they cause (docs/probes.md)."""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, only_run, run_harness, runs_dir, sleepy_log
from rich.console import Console
from rundocs import cell, run, schema_problems
from sqlalchemy import select
from standins import stand_in_collectors

from harness import tables
from harness.format.numbers import DASH, TIMES
from harness.history.db import connect
from harness.history.schema import points, samples, series
from harness.probes import overhead_pairs
from harness.probes.session import ProbeSession
from harness.probes.spec import parse_probes
from harness.rundoc.model import RunDoc
from harness.suites import load_suite

pytestmark = pytest.mark.unit


def ops(results: list[dict[str, Any]]) -> list[float]:
    return [float(r["ops_per_sec"]) for r in results]


def test_a_run_takes_its_figures_from_the_measurement_repeats_and_keeps_the_explain_ones_apart(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    # No collectors where they are looked for: the probes are unavailable (no privilege
    # needed), and still offwake, explain-only, makes explain repeats of their own.
    env = {**harness_env, "HARNESS_BPF_BUILD": str(tmp_path / "no-collectors")}
    args = ["run", "sleepy", "--strategies", "slow,fast", "--repeat", "4", "--explain-repeats"]
    args += ["2", "--probes", "sched,offwake", "--duration-s", "0.1", "--warmup-s", "0"]
    done = run_harness(args, env)
    assert done.returncode == 0, done.stderr
    doc = only_run(env)
    assert schema_problems(doc) == []
    config = doc["config"]
    assert config["probes"] == ["sched", "offwake"]
    assert (config["measurement_probes"], config["measurement_set"]) == (["sched"], "sched")
    assert (config["explain_repeats"], config["explain_set"]) == (2, "all")
    # 2 cells x (4 measurement + 2 explain repeats) ran, nothing more.
    assert len(sleepy_log(env)) == 12
    for each in doc["cells"]:
        measured, explained = each["repeats"], each["probe_variants"]["all"]
        assert (len(measured), len(explained)) == (4, 2)
        # The figures are the measurement repeats' alone.
        summary = each["summary"]["ops_per_sec"]
        assert summary["n"] == 4 and summary["median"] == statistics.median(ops(measured))
        assert each["explain_summary"]["ops_per_sec"]["median"] == statistics.median(ops(explained))
        # Interleaved: the explain repeats run in rounds 1 and 3 of 4, before that round's
        # measurement repeat, and pair with it.
        assert each["probe_rounds"] == {"all": [2, 4], "sched": [1, 2, 3, 4]}
        pairs = [explained[0]["ops_per_sec"] / measured[1]["ops_per_sec"]]
        pairs.append(explained[1]["ops_per_sec"] / measured[3]["ops_per_sec"])
        ratio = each["explain_ratio"]
        assert ratio["n"] == 2 and ratio["ratio"] == pytest.approx(statistics.median(pairs))
        assert (ratio["ci95_low"], ratio["ci95_high"]) == (min(pairs), max(pairs))
        # Each probe's record comes from the repeats it ran on in full: sched runs counters
        # only on the measurement repeats, so its record is the explain repeats', as offwake's.
        assert [r["repeat"] for r in each["probes"]["sched"]["repeats"]] == [2, 4]
        assert [r["repeat"] for r in each["probes"]["offwake"]["repeats"]] == [2, 4]
        # No BPF program attached (the probes are unavailable): a share of 0 on every repeat.
        assert [r["bpf_cpu_share"] for r in measured + explained] == [0.0] * 6
    assert doc["explain_ratio"]["n"] == 4
    log = [entry["strategy"] for entry in sleepy_log(env)]
    assert log[:3] == ["slow", "fast", "slow"]  # round 1: no explain repeat; round 2: one
    assert "figures: the measurement repeats (sched); with every probe (all): 2 explain" in (
        " ".join(done.stdout.split())
    )

    # The history takes the measurement repeats only.
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    run_dir = next((Path(env["HARNESS_RESULTS"]) / "runs").iterdir())
    imported = run_harness(["history", "import", "--db", url, str(run_dir)], env)
    assert imported.returncode == 0, imported.stderr
    with connect(url).connect() as conn:
        rows = conn.execute(
            select(series.c.strategy, samples.c.value)
            .join(points, points.c.series_id == series.c.id)
            .join(samples, samples.c.point_id == points.c.id)
            .where(series.c.metric == "ops_per_sec")
        ).all()
    for each in doc["cells"]:
        kept = sorted(value for strategy, value in rows if strategy == each["strategy"])
        assert kept == sorted(ops(each["repeats"]))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--explain-repeats", "4"], "4 explain repeats a cell, more than its 3 repeats"),
        (["--explain-repeats", "0"], "0 explain repeats, and offwake only run on explain"),
        (["--explain-repeats", "-1"], "--explain-repeats: must be >= 0, got '-1'"),
    ],
)
def test_explain_repeats_that_cannot_be_are_bad_input(
    harness_env: dict[str, str], extra: list[str], message: str
) -> None:
    args = ["run", "sleepy", "--probes", "sched,offwake", "--repeat", "3", *extra]
    done = run_harness(args, harness_env)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (Path(harness_env["HARNESS_RESULTS"]) / "runs").exists()


def test_zero_explain_repeats_leave_out_the_explain_probes_all_brought(
    harness_env: dict[str, str],
) -> None:
    args = ["run", "sleepy", "--strategies", "slow", "--repeat", "2", "--probes", "all"]
    done = run_harness([*args, "--explain-repeats", "0", "--duration-s", "0.05"], harness_env)
    assert done.returncode == 0, done.stderr
    config = only_run(harness_env)["config"]
    # futex is explain-only too: only sched (counters only) and gc are left.
    assert config["probes"] == ["sched", "gc"] and config["explain_repeats"] == 0
    assert "explain_set" not in config


def test_futex_runs_on_the_explain_repeats_only(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    """futex is explain-only (even counters only, each futex call of every process runs two
    programs: 1-4 % of the CPU on timers and lettuce): the measurement repeats carry sched
    alone, futex's record is the explain repeat's, and at 0 explain repeats naming it is bad
    input."""
    env = {**harness_env, "HARNESS_BPF_BUILD": str(tmp_path / "no-collectors")}
    args = ["run", "sleepy", "--strategies", "slow", "--repeat", "3", "--probes", "sched,futex"]
    args += ["--duration-s", "0.05", "--warmup-s", "0"]
    done = run_harness(args, env)
    assert done.returncode == 0, done.stderr
    doc = only_run(env)
    assert schema_problems(doc) == []
    config = doc["config"]
    assert (config["measurement_probes"], config["measurement_set"]) == (["sched"], "sched")
    assert (config["explain_repeats"], config["explain_set"]) == (1, "all")
    (only,) = doc["cells"]
    assert only["probe_rounds"] == {"all": [2], "sched": [1, 2, 3]}
    assert [r["repeat"] for r in only["probes"]["futex"]["repeats"]] == [2]

    zero = run_harness([*args, "--explain-repeats", "0"], env)
    assert zero.returncode == 2
    assert "0 explain repeats, and futex only run on explain repeats" in zero.stderr
    assert len(zero.stderr.strip().splitlines()) == 1, zero.stderr
    assert len(list(runs_dir(env).glob("*/run.json"))) == 1  # nothing written for it


def test_the_measurement_repeats_run_sched_counters_only_and_futex_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind's measurement_args reach its collector's command line on measurement repeats
    only: sched --counters-only. futex has none: wherever it runs (the explain repeats,
    --probe-overhead's futex alone) it takes its stacks."""
    stand_in_collectors(tmp_path, ("futex", "sched"), monkeypatch)
    specs = parse_probes("sched,futex")
    for measurement in (True, False):
        session = ProbeSession(specs, tmp_path / "raw", 1, None, measurement=measurement)
        session.on_ready([os.getpid()])
        session.on_measure_start()
        session.on_measure_end()
        session.close()
        futex = (tmp_path / "futex.args").read_text().split()
        sched = (tmp_path / "sched.args").read_text().split()
        assert futex[:2] == ["--pid", str(os.getpid())] and futex[2] == "--out"
        assert "--no-stacks" not in futex and "--counters-only" not in futex
        assert sched[:2] == ["--pid", str(os.getpid())]
        assert ("--counters-only" in sched) is measurement and "--no-stacks" not in sched


def test_suite_toml_sets_the_explain_repeats_of_a_matrix(tmp_path: Path) -> None:
    text = (FIXTURES / "sleepy" / "suite.toml").read_text()
    manifest = tmp_path / "suite.toml"
    manifest.write_text(text.replace("[quick]\n", "[quick]\nexplain_repeats = 0\n"))
    suite = load_suite(manifest)
    assert (suite.bench.explain_repeats, suite.quick.explain_repeats) == (None, 0)
    manifest.write_text(text.replace("[bench]\n", "[bench]\nexplain_repeats = 3\n"))
    with pytest.raises(Exception, match=r"key 'bench.explain_repeats': 3 is more than the 2"):
        load_suite(manifest)


def fixture_run() -> dict[str, Any]:
    """Two cells; explain repeats in rounds 2 and 3 of 3, at 0.5x and 0.8x their round's."""
    cells = []
    for strategy, base in (("none", 1000.0), ("tracker", 2000.0)):
        measured = [{"ops_per_sec": base * f, "bpf_cpu_share": 0.002} for f in (1.0, 1.1, 0.9)]
        explained = [{"ops_per_sec": base * 1.1 * 0.5, "bpf_cpu_share": 0.04}]
        explained.append({"ops_per_sec": base * 0.9 * 0.8, "bpf_cpu_share": 0.06})
        cells.append(
            cell(
                strategy,
                "steady",
                {},
                measured,
                probe_variants={"all": explained},
                probe_rounds={"sched+gc": [1, 2, 3], "all": [2, 3]},
            )
        )
    return run(
        cells,
        config={
            **run([])["config"],
            "probes": ["sched", "gc", "offwake"],
            "measurement_probes": ["sched", "gc"],
            "measurement_set": "sched+gc",
            "explain_repeats": 2,
            "explain_set": "all",
        },
    )


def test_the_explain_ratio_pairs_each_explain_repeat_with_its_rounds_measurement() -> None:
    doc = fixture_run()
    first = doc["cells"][0]
    ratios = overhead_pairs.explain_ratios(
        first["probe_variants"]["all"], first["repeats"], first["probe_rounds"], "all", "sched+gc"
    )
    assert ratios == pytest.approx([0.5, 0.8])
    figures = overhead_pairs.interval(ratios + ratios)  # both cells' rounds pooled
    assert figures["n"] == 4 and figures["ratio"] == pytest.approx(0.65)
    assert (figures["ci95_low"], figures["ci95_high"]) == pytest.approx((0.5, 0.8))


def test_the_table_footer_says_where_the_figures_come_from_and_the_perturbation() -> None:
    doc = fixture_run()
    doc["explain_ratio"] = overhead_pairs.interval([0.5, 0.8, 0.5, 0.8])
    assert schema_problems(doc) == []
    console = Console(width=400, record=True)
    tables.print_run(RunDoc.model_validate(doc), console)
    text = console.export_text()
    line = next(x for x in text.splitlines() if x.startswith("figures:"))
    assert line == (
        "figures: the measurement repeats (sched, gc); with every probe (all): 2 explain "
        "repeat(s) a cell, ops/s paired by round explain / measurement "
        f"0.65{TIMES} [0.50{TIMES}{DASH}0.80{TIMES}] over 4 rounds, p=0.12; "
        "BPF CPU share (median repeat): measurement 0.2%, explain 5.0%"
    )
    # A run from before the split has no such line.
    doc["config"] = run([])["config"]
    console = Console(width=400, record=True)
    tables.print_run(RunDoc.model_validate(doc), console)
    assert "figures:" not in console.export_text()
