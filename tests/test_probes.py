"""Probes without the kernel: --probes parsing, bpftrace snapshots, per-op metrics, the cell
record, and a run whose probes are unavailable."""

from __future__ import annotations

import json
import signal
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import only_run, run_harness, runs_dir
from rich.console import Console

from harness.base.stop import StopFlag
from harness.errors import BadInput
from harness.format.notes import probe_notes
from harness.paths import REPO_ROOT
from harness.probes import overhead, registry
from harness.probes.drivers import btmaps
from harness.probes.drivers.bpftrace import failed_only_in_teardown, interrupt_until_exit
from harness.probes.drivers.process import ProbeProcess
from harness.probes.kind import (
    DriverOptions,
    ProbeMetric,
    declare,
    no_files,
    no_stacks,
    totals_report,
)
from harness.probes.kinds import sched as sched_kind
from harness.probes.log2 import hist_quantile
from harness.probes.metrics import per_op_metrics
from harness.probes.probe import ATTACH_TIMEOUT_S, ProbeResult, not_attached
from harness.probes.record import cell_folder, with_repeat
from harness.probes.spec import ProbeSpec, parse_probes
from harness.report.data import probe_problems

pytestmark = pytest.mark.unit

SCRIPT = REPO_ROOT / "bpf" / "syscalls_per_op.bt"


def names(text: str) -> list[str]:
    return [spec.name for spec in parse_probes(text)]


def test_probe_lists() -> None:
    assert names("all") == ["sched", "futex", "gc", "oncpu", "offwake", "perfstat"]
    assert names("futex, sched,futex") == ["futex", "sched"]
    assert names("sched,all") == ["sched", "futex", "gc", "oncpu", "offwake", "perfstat"]
    # One GC probe, whatever the runtime; jvmgc, its name for the JVM before, is an alias.
    assert names("jvmgc") == ["gc"]
    assert names("gc,jvmgc,sched") == ["gc", "sched"]
    assert registry.kind_of("jvmgc") is registry.kind_of("gc")
    assert parse_probes("none") == ()
    (spec,) = parse_probes(f"bt:{SCRIPT}")
    assert spec == ProbeSpec("bt:syscalls_per_op", SCRIPT)
    assert spec.file_stem == "bt-syscalls_per_op"
    # A bare script name is looked up in the repo's bpf/ folder too.
    assert parse_probes("bt:syscalls_per_op.bt") == (spec,)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "gpu",
            "unknown probe 'gpu' (valid: sched, futex, gc, oncpu, offwake, perfstat, all, none, "
            "bt:PATH/TO/SCRIPT.bt)",
        ),
        (
            "sched,jvm",
            "unknown probe 'jvm' (valid: sched, futex, gc, oncpu, offwake, perfstat, all, none, "
            "bt:PATH",
        ),
        ("none,sched", "'none' cannot be combined with other probes"),
        (" , ", "--probes: expected a comma-separated list"),
        ("bt:", "probe 'bt:': expected bt:PATH/TO/SCRIPT.bt"),
        ("bt:nowhere/x.bt", "probe 'bt:nowhere/x.bt': no bpftrace script at nowhere/x.bt"),
    ],
)
def test_bad_probe_lists(text: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_probes(text)
    assert message in str(err.value)


def test_two_scripts_with_one_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "syscalls_per_op.bt").write_text("BEGIN { exit(); }\n")
    with pytest.raises(BadInput, match="two bpftrace scripts named 'bt:syscalls_per_op'"):
        parse_probes(f"bt:{SCRIPT},bt:{tmp_path / 'syscalls_per_op.bt'}")


@pytest.mark.parametrize("command", ["run sleepy", "bench", "probe --pid 1 --duration-s 1"])
def test_an_unknown_probe_is_one_line_and_exit_2(command: str, harness_env: dict[str, str]) -> None:
    done = run_harness([*command.split(), "--probes", "sched,gpu"], harness_env)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "harness: error: unknown probe 'gpu' (valid: sched, futex, gc, oncpu, offwake, perfstat, "
        "all, none, bt:PATH/TO/SCRIPT.bt)"
    ]


def test_overhead_needs_probes(harness_env: dict[str, str]) -> None:
    done = run_harness(["run", "sleepy", "--probes", "none", "--probe-overhead"], harness_env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "harness: error: --probe-overhead needs probes to measure, and --probes is none"
    )


def test_probe_needs_a_live_pid(harness_env: dict[str, str]) -> None:
    done = run_harness(["probe", "--pid", "999999999", "--duration-s", "1"], harness_env)
    assert done.returncode == 2
    assert done.stderr.strip() == "harness: error: --pid 999999999: no such process"


def events(*lines: str) -> list[dict[str, Any]]:
    parsed = [btmaps.parse_line(line) for line in lines]
    return [e for e in parsed if e is not None]


def test_bpftrace_window_difference() -> None:
    start, end = (
        events(
            '{"type": "map", "data": {"@total": 10}}',
            '{"type": "map", "data": {"@calls": {"read": 5, "write": 1}}}',
            '{"type": "hist", "data": {"@ns": [{"min": 8, "max": 15, "count": 2}]}}',
            '{"type": "map", "data": {"@name": {"0": "read"}}}',
        ),
        events(
            '{"type": "map", "data": {"@total": 25}}',
            # usym() keys repeat a function's name once per call site: they add up.
            '{"type": "map", "data": {"@calls": {"read": 9, "write": 1, "poll": 2, "poll": 3}}}',
            '{"type": "hist", "data": {"@ns": [{"min": 8, "max": 15, "count": 7},'
            ' {"min": 16, "max": 31, "count": 1}]}}',
            '{"type": "map", "data": {"@name": {"0": "read"}}}',
            '{"type": "stats", "data": {"@s": {"count": 2, "average": 3, "total": 6}}}',
        ),
    )
    diff, skipped = btmaps.diff_snapshots(btmaps.maps_of(start), btmaps.maps_of(end))
    assert diff == {
        "@total": 15,
        "@calls": {"read": 4, "poll": 5},
        "@ns": [{"min": 8, "max": 15, "count": 5}, {"min": 16, "max": 31, "count": 1}],
    }
    assert skipped == ["@name", "@s"]


def test_a_failure_to_close_at_exit_keeps_the_window() -> None:
    """bpftrace 0.17 exits non-zero when closing a uprobe's fd fails in its destructor,
    after printing its final maps (seen under load in test_probe_a_running_process)."""
    teardown = (
        "ERROR: failed to close perf event FDs for probe: "
        "uprobe:/lib/x86_64-linux-gnu/libc.so.6:pthread_mutex_lock"
    )
    assert failed_only_in_teardown([teardown])
    assert failed_only_in_teardown(["Attaching 3 probes...", teardown])
    assert not failed_only_in_teardown([])
    assert not failed_only_in_teardown(["ERROR: Could not resolve symbol: x", teardown])


# bpftrace 0.17 as it stops: the first SIGINT lost (it came while maps were printed), then
# SIGINT back to its default action while the final maps are printed and the probes detached.
LOSES_ONE_SIGINT = """
import signal, sys, time
received = 0
def on_sigint(signum, frame):
    global received
    received += 1
signal.signal(signal.SIGINT, on_sigint)
print("ready", flush=True)
while received < 2:
    time.sleep(0.01)
signal.signal(signal.SIGINT, signal.SIG_DFL)
time.sleep(2.5)
sys.exit(0)
"""


def test_sigint_is_repeated_only_while_bpftrace_still_catches_it() -> None:
    """A repeat that reached bpftrace after it reset SIGINT killed it mid-teardown (-2)."""
    process = ProbeProcess([sys.executable, "-c", LOSES_ONE_SIGINT])
    try:
        assert process.wait_for_line(lambda line: line == "ready", time.monotonic() + 60, None)
        process.send(signal.SIGINT)
        assert interrupt_until_exit(process, timeout_s=60) == 0
    finally:
        process.kill()


def test_the_start_snapshot_is_the_first_run_of_maps() -> None:
    window = events(
        "",
        '{"type": "map", "data": {"@a": 1}}',
        '{"type": "map", "data": {"@b": 2}}',
        '{"type": "printf", "data": "tick"}',
        '{"type": "map", "data": {"@a": 5}}',
    )
    snapshot, end = btmaps.first_snapshot(window)
    assert [list(e["data"]) for e in snapshot] == [["@a"], ["@b"]] and end == 2


def test_quantiles_interpolate_inside_log2_buckets() -> None:
    # Slot i holds [2^i, 2^(i+1)) ns: 10 values in [1024, 2048), 10 in [2048, 4096).
    hist = [0] * 10 + [10, 10]
    assert hist_quantile(hist, 0.5) == 2048.0  # the 10th of 20 ends the first bucket
    assert hist_quantile(hist, 0.25) == 1024 + 1024 * 5 / 10
    assert hist_quantile(hist, 0.99) == pytest.approx(2048 + 2048 * 9.8 / 10)
    assert hist_quantile([3], 0.5) == 1.0  # slot 0 is [0, 2)
    assert hist_quantile([0, 0], 0.5) is None


SCHED = {
    "threads": [
        {
            "pid": 7,
            "tid": 7,
            "voluntary_switches": 30,
            "involuntary_switches": 10,
            "offcpu_ns": 5000,
            "runq_ns": 100,
            "runq_hist_log2_ns": [0, 0, 0, 0, 4],
            "wakeups_received": 25,
        },
        {
            "pid": 7,
            "tid": 8,
            "voluntary_switches": 10,
            "involuntary_switches": 0,
            "offcpu_ns": 3000,
            "runq_ns": 200,
            "runq_hist_log2_ns": [0, 0, 0, 0, 0, 4],
            "wakeups_received": 15,
        },
        # The server's threads are not the client's.
        {
            "pid": 9,
            "tid": 9,
            "voluntary_switches": 999,
            "offcpu_ns": 999,
            "runq_ns": 999,
            "wakeups_received": 9,
        },
    ]
}
FUTEX = {
    "processes": [
        {
            "pid": 7,
            "ops": {
                "WAIT": {"count": 6, "total_ns": 900},
                "WAIT_BITSET": {"count": 2, "total_ns": 100},
            },
        },
        {"pid": 9, "ops": {"WAIT": {"count": 1000, "total_ns": 1}}},
    ]
}


def test_per_op_metrics_count_the_client_only() -> None:
    metrics = per_op_metrics({"ok": 20, "issued": 40}, {"sched": SCHED, "futex": FUTEX}, 7)
    assert metrics == {
        "ctx_switches_per_op": 2.5,
        "voluntary_switches_per_op": 2.0,
        "wakeups_per_op": 2.0,
        "offcpu_ns_per_op": 400.0,
        "runq_ns_per_op": 15.0,
        # 4 values in [16, 32) and 4 in [32, 64): the median ends the first bucket.
        "runq_latency_ns": {"p50": 32.0, "p99": pytest.approx(32 + 32 * 3.92 / 4)},
        "futex_waits_per_op": 0.4,
        "futex_wait_ns_per_op": 50.0,
    }
    assert per_op_metrics({"issued": 40}, {"futex": FUTEX}, 7)["futex_waits_per_op"] == 0.2
    assert per_op_metrics({"ops_per_sec": 5.0}, {"sched": SCHED}, 7) == {}


def test_sched_counters_only_gives_the_per_op_metrics_but_no_quantiles() -> None:
    """The measurement repeats' sched (`--counters-only`): switches, wake-ups, off-CPU and
    run-queue time per op as in full; no histograms, so no run-queue quantiles."""
    threads = [{**t, "runq_hist_log2_ns": [], "offcpu_hist_log2_ns": []} for t in SCHED["threads"]]
    counters = {"mode": "counters", "threads": threads}
    metrics = per_op_metrics({"ok": 20}, {"sched": counters}, 7)
    full = per_op_metrics({"ok": 20}, {"sched": SCHED}, 7)
    assert metrics == {key: value for key, value in full.items() if key != "runq_latency_ns"}
    assert metrics["runq_ns_per_op"] == 15.0
    assert "runq_ns_per_op" in registry.columns()


def test_sched_section_of_counters_shows_run_queue_time_not_quantiles() -> None:
    threads = [{**t, "runq_hist_log2_ns": []} for t in SCHED["threads"]]
    console = Console(record=True, width=200)
    sched_kind.section("sched", {"mode": "counters", "threads": threads}, console)
    text = console.export_text()
    assert "run queue" in text and "runq p50" not in text, text
    assert "1.30µs in the run queue" in text, text  # 100 + 200 + 999 ns
    console = Console(record=True, width=200)
    sched_kind.section("sched", SCHED, console)
    assert "runq p50" in console.export_text()


def test_why_a_probe_process_is_not_attached_and_it_is_ended() -> None:
    """A stop first, then a process still running (not attached in time), then how it ended;
    the process is ended in every case."""

    def exited(process: ProbeProcess) -> str:
        return f"exited with code {process.wait(0)}"

    stop = StopFlag()
    running = ProbeProcess([sys.executable, "-c", "import time; time.sleep(600)"])
    assert not_attached(running, stop, " and ready", exited) == (
        f"not attached and ready after {ATTACH_TIMEOUT_S:g} s"
    )
    assert not running.running()
    ended = ProbeProcess([sys.executable, "-c", "raise SystemExit(3)"])
    assert ended.wait(60) == 3
    assert not_attached(ended, stop, "", exited) == "exited with code 3"
    stop.signum = signal.SIGTERM
    stopped = ProbeProcess([sys.executable, "-c", "import time; time.sleep(600)"])
    assert not_attached(stopped, stop, "", exited) == "interrupted before it attached"
    assert not stopped.running()


def test_a_kind_is_declared_by_its_module_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """`declare` takes each field the module defines by its name, ProbeKind's default for the
    rest, a collector's doctor line when it has no `check`, and refuses a field given twice."""
    module = types.ModuleType("kinds_fixture")
    module.NAME = "fixture"
    module.METRICS = (ProbeMetric("fixture_per_op", "events", 99),)

    def driver(spec: ProbeSpec, out_path: Path, options: DriverOptions) -> Any:
        raise AssertionError("not driven")

    def section(name: str, data: Any, console: Console) -> None:
        console.print(name)

    module.driver, module.section = driver, section
    module.report = totals_report(lambda totals: f"{totals['n']} <events>")
    monkeypatch.setitem(sys.modules, module.__name__, module)

    kind = declare(module.__name__, collector=True, explain=True)
    assert (kind.name, kind.driver, kind.section) == ("fixture", driver, section)
    assert kind.metrics == module.METRICS and kind.collector and kind.explain
    assert kind.graphs == () and kind.stacks is no_stacks and kind.files_bytes is no_files
    assert kind.check(Path("/nonexistent-root")).check == "probe fixture"
    assert kind.report(Path(), {"totals": {"n": 3}}) == ["<p>3 &lt;events&gt;</p>"]
    assert kind.report(Path(), {"totals": {}}) == []
    with pytest.raises(TypeError, match="metrics"):
        declare(module.__name__, metrics=())
    # Each registered kind's module is where its fields come from.
    assert sched_kind.KIND.report is sched_kind.report
    assert sched_kind.KIND.measurement_args == ("--counters-only",)


def test_the_cell_record_keeps_paths_totals_and_reasons(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    folder = cell_folder(run_dir, "none/concurrency=64")
    assert folder == run_dir / "probes" / "none" / "concurrency=64"
    assert cell_folder(run_dir, "a/../b") == run_dir / "probes" / "a" / "_.._" / "b"
    path = folder / "r1-sched.json"
    sched = {"window_ns": 5, "lost_events": 0, "totals": {"wakeups": 3, "runq": [1, 2]}}
    summaries = with_repeat(
        {},
        1,
        {
            "sched": ProbeResult("sched", path=path, data=sched),
            "futex": ProbeResult("futex", unavailable="needs root"),
        },
        run_dir,
        ops=10.0,
    )
    second = {**sched, "totals": {"wakeups": 4, "runq": [1, 0, 5]}}
    summaries = with_repeat(
        summaries,
        2,
        {
            "sched": ProbeResult("sched", path=folder / "r2-sched.json", data=second),
            "futex": ProbeResult("futex", unavailable="needs root"),
        },
        run_dir,
        ops=10.0,
    )
    probes = {name: summary.model_dump() for name, summary in summaries.items()}
    assert probes["sched"]["paths"] == [
        "probes/none/concurrency=64/r1-sched.json",
        "probes/none/concurrency=64/r2-sched.json",
    ]
    assert probes["sched"]["lost_events"] == 0
    assert probes["sched"]["totals"] == {"wakeups": 7, "runq": [2, 2, 5]}
    assert probes["futex"]["unavailable"] == "needs root"
    assert probes["futex"]["repeats"] == [
        {"repeat": 1, "unavailable": "needs root"},
        {"repeat": 2, "unavailable": "needs root"},
    ]


def test_overhead_variants_and_ratios() -> None:
    sched, futex, offwake = parse_probes("sched,futex,offwake")
    # futex's and offwake's stacks make them explain-only: the cell's repeats carry sched
    # (counters only), the explain set all.
    assert overhead.variants((sched, futex, offwake), overhead=False, explain=True) == [
        ("all", (sched, futex, offwake), True),
        ("sched", (sched,), False),
    ]
    assert overhead.variants((sched, futex), overhead=False, explain=True) == [
        ("all", (sched, futex), True),
        ("sched", (sched,), False),
    ]
    # sched is lean on the measurement repeats, in full on the explain ones: same probes,
    # told apart by the explain set's key.
    assert overhead.variants((sched,), overhead=False, explain=True) == [
        ("explain", (sched,), True),
        ("sched", (sched,), False),
    ]
    # Without explain repeats there is no explain set.
    assert overhead.variants((sched,), overhead=False, explain=False) == [
        ("sched", (sched,), False),
    ]
    # --probe-overhead: sched alone is the measurement set, not run twice a round.
    variants = overhead.variants((sched, offwake), overhead=True, explain=True)
    assert [(v.key, v.explain) for v in variants] == [
        ("none", False),
        ("offwake", False),
        ("all", True),
        ("sched", False),
    ]
    assert overhead.variants((sched,), overhead=True, explain=False) == [
        ("none", (), False),
        ("sched", (sched,), False),
    ]
    # Only explain-only probes: the measurement repeats run without any, and are `none`.
    assert overhead.variants((offwake,), overhead=True, explain=True) == [
        ("offwake", (offwake,), True),
        ("none", (), False),
    ]
    everything = parse_probes("all")
    keys = [v.key for v in overhead.variants(everything, overhead=False, explain=True)]
    assert keys == ["all", "sched+gc"]
    runs = {"none": [{"ops_per_sec": 100}, {"ops_per_sec": 120}], "sched": [{"ops_per_sec": 99}]}
    assert overhead.cell_overhead(runs) == {"sched": 0.9}
    cells = [{"probe_overhead": {"sched": 0.5}}, {"probe_overhead": {"sched": 2.0}}]
    ratios = [cell["probe_overhead"] for cell in cells]
    assert overhead.run_overhead(ratios) == {"sched": pytest.approx(1.0)}


def test_unavailable_probes_are_recorded_and_the_run_goes_on(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    # No collectors where they are looked for, no bpftrace on PATH.
    env = {**harness_env, "HARNESS_BPF_BUILD": str(tmp_path / "no-collectors")}
    env["PATH"] = str(tmp_path)
    args = ["run", "sleepy", "--strategies", "slow", "--repeat", "2"]
    args += ["--probes", f"sched,futex,bt:{SCRIPT}"]
    done = run_harness([*args, "--duration-s", "0.1", "--warmup-s", "0"], env)
    assert done.returncode == 0, done.stderr
    doc = only_run(env)
    assert doc["status"] == "complete"
    assert doc["config"]["probes"] == ["sched", "futex", "bt:syscalls_per_op"]
    (cell,) = doc["cells"]
    assert len(cell["repeats"]) == 2
    reasons = {
        name: f"collector {tmp_path}/no-collectors/{name} is not built (run `make -C bpf`)"
        for name in ("sched", "futex")
    }
    reasons["bt:syscalls_per_op"] = "bpftrace is not installed (apt install bpftrace)"
    # The cell keeps the explain repeat's records (the one explain repeat ran in the second
    # round of two): the script and futex run there only, sched runs in full there (counters
    # only on the measurement repeats).
    rounds = {"sched": [2], "futex": [2], "bt:syscalls_per_op": [2]}
    for name, reason in reasons.items():
        assert cell["probes"][name]["unavailable"] == reason
        assert [r["repeat"] for r in cell["probes"][name]["repeats"]] == rounds[name]
        assert f"probe {name} unavailable (slow): {reason}" in done.stdout
    assert not (Path(env["HARNESS_RESULTS"]) / "runs" / doc["run_id"] / "probes").exists()
    assert "ctx_switches_per_op" not in json.dumps(cell["repeats"])


def test_probes_given_by_name_are_told_from_those_all_brings() -> None:
    named = {spec.name: spec.named for spec in parse_probes(f"gc,all,bt:{SCRIPT}")}
    assert named == {
        "gc": True,
        "sched": False,
        "futex": False,
        "oncpu": False,
        "offwake": False,
        "perfstat": False,
        "bt:syscalls_per_op": True,
    }
    assert [s.named for s in parse_probes("all,jvmgc")] == [False, False, True, False, False, False]
    assert parse_probes("gc") == parse_probes("all")[2:3]  # the same probe, named or not


def not_applying_cells(names: tuple[str, ...]) -> list[dict[str, Any]]:
    gc = {"repeats": [{"repeat": 1, "not_applicable": "no Go program or JVM (x)"}]}
    gc |= {"not_applicable": "no Go program or JVM (x)"}
    sched = {"repeats": [{"repeat": 1, "unavailable": "needs root"}], "unavailable": "needs root"}
    return [{"id": cell, "probes": {"gc": gc, "sched": sched}} for cell in names]


def test_a_probe_that_does_not_apply_is_a_note_only_when_named() -> None:
    cells = not_applying_cells(("a", "b"))
    assert probe_notes(cells) == ["probe sched unavailable (a, b): needs root"]
    assert probe_notes(cells, {"gc"}) == [
        "probe gc does not apply (a, b): no Go program or JVM (x)",
        "probe sched unavailable (a, b): needs root",
    ]
    (cell,) = not_applying_cells(("a",))
    assert probe_problems(cell["probes"]["gc"]) == []
    assert probe_problems(cell["probes"]["gc"], named=True) == [
        "does not apply: no Go program or JVM (x)"
    ]
    assert probe_problems(cell["probes"]["sched"]) == ["unavailable: needs root"]


def test_a_probe_that_does_not_apply_is_recorded(tmp_path: Path) -> None:
    result = ProbeResult("gc", not_applicable="no Go program or JVM (x)")
    assert not result.ok
    summaries = with_repeat({}, 1, {"gc": result}, tmp_path, ops=10.0)
    summaries = with_repeat(summaries, 2, {"gc": result}, tmp_path, ops=10.0)
    assert summaries["gc"].model_dump() == {
        "repeats": [
            {"repeat": 1, "not_applicable": "no Go program or JVM (x)"},
            {"repeat": 2, "not_applicable": "no Go program or JVM (x)"},
        ],
        "not_applicable": "no Go program or JVM (x)",
    }


def test_gc_on_a_workload_without_a_gc_runtime_is_quiet_unless_named(
    harness_env: dict[str, str], tmp_path: Path
) -> None:
    """sleepy runs Python: gc does not apply. run.json records it either way; the table and
    summary.md note it only when --probes names gc, while the probes that cannot run here
    (no collectors, no perf, no bpftrace) keep their notes: by default five of them, which
    the table says in one line (NOTE_LINES), summary.md one a line."""
    env = {**harness_env, "HARNESS_BPF_BUILD": str(tmp_path / "no-collectors")}
    env["PATH"] = str(tmp_path)
    del env["HARNESS_PROBES"]  # the default: all
    args = ["run", "sleepy", "--strategies", "slow", "--repeat", "1"]
    args += ["--duration-s", "0.1", "--warmup-s", "0"]
    for probes in ((), ("--probes", "sched,gc")):
        env["HARNESS_RESULTS"] = str(tmp_path / ("named" if probes else "default"))
        done = run_harness([*args, *probes], env)
        assert done.returncode == 0, done.stderr
        doc = only_run(env)
        assert doc["config"]["probes_named"] == (["sched", "gc"] if probes else [])
        (cell,) = doc["cells"]
        gc = cell["probes"]["gc"]
        exe = Path(sys.executable).resolve().name
        reason = f"no Go program or JVM among the measured processes ({exe})"
        assert gc == {
            "repeats": [{"repeat": 1, "not_applicable": reason}],
            "not_applicable": reason,
        }
        out = " ".join(done.stdout.split())  # the console wraps long lines
        built = f"collector {tmp_path}/no-collectors/sched is not built (run `make -C bpf`)"
        if probes:  # sched unavailable, gc does not apply: a line each
            assert f"probe sched unavailable (slow): {built}" in out
            assert f"probe gc does not apply (slow): {reason}" in out
        else:  # five probes unavailable, gc not among them: one line
            assert "probes without full output: sched unavailable (1 of 1 cells)" in out
            assert "perfstat unavailable (1 of 1 cells): the reasons in report.html" in out
            assert "gc does not apply" not in out
        assert "gc unavailable" not in out
        summary = (runs_dir(env) / doc["run_id"] / "summary.md").read_text()
        escaped = built.replace("`", "\\`")  # summary.md's markdown escapes backticks
        assert f"probe sched unavailable: {escaped}" in summary
        assert ("probe gc does not apply" in summary) == bool(probes), summary
