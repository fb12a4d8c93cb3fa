"""The CLI surface: help, bad input, missing builds, list, build, the lock, compare, doctor."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, HARNESS, OTHERS_RUNNING, only_run, run_harness, runs_dir
from product_text import issue_refs

from harness.cli import main
from harness.commands import consoles
from harness.runlock import RunLock

pytestmark = pytest.mark.unit

SLEEPY_PARAMS = "rate, noise, mode, verbose, label, hog_mb"


def invoke(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`harness ARGS` in this process: (exit code, stdout, stderr)."""
    try:
        code = main(args)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def workloads(
    tmp_path: Path, harness_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A workloads folder with sleepy, a suite that is not built and one whose describe lies."""
    root = tmp_path / "workloads"
    root.mkdir()
    (root / "sleepy").symlink_to(FIXTURES / "sleepy")
    (root / "ghost").mkdir()
    (root / "ghost" / "suite.toml").write_text(
        'name = "ghost"\ndescription = "never built"\nbinary = "bin/ghost"\n'
        'build = "echo building ghost; exit 3"\n'
    )
    (root / "liar").mkdir()
    (root / "liar" / "suite.toml").write_text(
        'name = "liar"\nbinary = "liar.sh"\nbuild = "echo built liar"\n'
    )
    script = root / "liar" / "liar.sh"
    script.write_text("#!/bin/sh\necho 'not json'\n")
    script.chmod(0o755)
    monkeypatch.setenv("HARNESS_WORKLOADS", str(root))
    yield root


@pytest.mark.parametrize(
    "command", ["", "list", "build", "run", "bench", "probe", "compare", "doctor"]
)
def test_every_command_has_help_with_examples(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = invoke([*command.split(), "--help"], capsys)
    assert code == 0
    assert "examples:" in out
    assert issue_refs(out) == []
    assert f"harness {command}".strip() in out


def test_the_installed_script_runs(harness_env: dict[str, str]) -> None:
    script = Path(sys.executable).with_name("harness")
    done = subprocess.run(
        [str(script), "run", "--help"], env=harness_env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "--param K=V" in done.stdout


BAD_INPUT = [
    (["run", "nope"], "unknown suite 'nope' (valid: sleepy)"),
    (
        ["run", "sleepy", "--strategies", "slow,zippy"],
        "unknown strategy 'zippy' for suite 'sleepy' (valid: slow, fast, crash, hang, liar)",
    ),
    (
        ["run", "sleepy", "--scenario", "rush"],
        "unknown scenario 'rush' for suite 'sleepy' (valid: steady, burst)",
    ),
    (
        ["run", "sleepy", "--param", "speed=3"],
        f"unknown parameter 'speed' for suite 'sleepy' (valid: {SLEEPY_PARAMS})",
    ),
    (
        ["run", "sleepy", "--param", "rate=0"],
        "bad value for parameter 'rate': '0' is out of range (valid: int 1..1000000)",
    ),
    (
        ["run", "sleepy", "--param", "rate=100", "--param", "rate=fast"],
        "bad value for parameter 'rate': 'fast' is not an integer (valid: int 1..1000000)",
    ),
    (
        ["run", "sleepy", "--param", "mode=odd"],
        "bad value for parameter 'mode': 'odd' is not a valid choice (valid: plain, fancy)",
    ),
    (
        ["run", "sleepy", "--param", "verbose=2"],
        "bad value for parameter 'verbose': '2' is not a boolean (valid: true, false)",
    ),
    (["run", "sleepy", "--param", "rate"], "--param 'rate': expected KEY=VALUE"),
    (["run", "sleepy", "--repeat", "0"], "argument --repeat: must be >= 1, got '0'"),
    (["run", "sleepy", "--repeat", "two"], "argument --repeat: expected an integer >= 1"),
    (["run", "sleepy", "--duration-s", "0"], "argument --duration-s: must be > 0, got '0'"),
    (["run", "sleepy", "--duration-s", "-1"], "argument --duration-s: must be > 0, got '-1'"),
    (["run", "sleepy", "--warmup-s", "-0.5"], "argument --warmup-s: must be >= 0, got '-0.5'"),
    (
        ["run", "sleepy", "--probes", "sched,gpu"],
        "unknown probe 'gpu' (valid: sched, futex, gc, oncpu, offwake, perfstat, all, none, "
        "bt:PATH/TO/SCRIPT.bt)",
    ),
    (
        ["run", "sleepy", "--order", "random"],
        "argument --order: invalid choice: 'random' (choose from interleaved, sequential)",
    ),
    (["run"], "the following arguments are required: SUITE"),
    (["bench", "--suites", "sleepy,nope"], "unknown suite 'nope' (valid: sleepy)"),
    (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT)
def test_bad_input_is_one_line_and_creates_nothing(
    args: list[str],
    message: str,
    harness_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = invoke(args, capsys)
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("harness: error: ")
    assert message.replace("'", "") in err.replace("'", "")  # argparse quotes differ by version
    assert not Path(harness_env["HARNESS_RESULTS"]).exists()


def test_an_unusable_out_dir_is_bad_input(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _, err = invoke(["run", "sleepy", "--out", str(blocker / "runs")], capsys)
    assert code == 2
    assert err == (
        f"harness: error: cannot create run directories in {blocker / 'runs'}: "
        f"{blocker} is not a directory\n"
    )


def test_a_bad_deadline_slack_is_bad_input(
    harness_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HARNESS_DEADLINE_SLACK_S", "soon")
    code, _, err = invoke(["run", "sleepy"], capsys)
    assert code == 2
    assert "HARNESS_DEADLINE_SLACK_S must be a number of seconds > 0, got 'soon'" in err


@pytest.mark.parametrize("command", [["run", "ghost"], ["bench"], ["bench", "--suites", "ghost"]])
def test_a_suite_that_is_not_built(
    command: list[str], workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = invoke(command, capsys)
    assert code == 2 and out == ""
    assert err.startswith("harness: error: suite 'ghost' is not built: run `make deps`")
    assert len(err.splitlines()) == 1


def test_a_describe_that_breaks_the_contract(
    workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = invoke(["run", "liar"], capsys)
    assert code == 1
    assert err.startswith(f"harness: error: `{workloads / 'liar' / 'liar.sh'} describe` printed")
    assert "invalid JSON" in err


def test_list_as_json(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke(["list", "--json"], capsys)
    assert code == 1  # the liar's describe failed
    entries = {e["name"]: e for e in json.loads(out)}
    assert list(entries) == ["ghost", "liar", "sleepy"]
    assert entries["ghost"]["status"] == "not built: run `make deps`"
    assert not entries["ghost"]["built"] and "strategies" not in entries["ghost"]
    assert entries["liar"]["status"].startswith("describe failed: ")
    sleepy = entries["sleepy"]
    assert sleepy["status"] == "ok" and sleepy["baseline"] == "slow"
    assert [s["name"] for s in sleepy["strategies"]] == ["slow", "fast", "crash", "hang", "liar"]
    assert [s["name"] for s in sleepy["scenarios"]] == ["steady", "burst"]
    rate = sleepy["params"][0]
    assert rate["name"] == "rate" and rate["type"] == "int" and rate["default"] == 1000
    assert rate["valid"] == "int 1..1000000" and rate["help"] == "base ops/s of the slow strategy"


def test_list_as_tables(workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = invoke(["list"], capsys)
    ghost = out[out.index("ghost: never built") : out.index("liar:")]
    assert "not built: run `make deps`" in ghost
    assert "twice the base rate" in out  # a strategy's help
    assert "plain, fancy" in out and "rate=500" in out


def test_build_streams_output_and_names_the_failing_suite(
    workloads: Path, harness_env: dict[str, str]
) -> None:
    env = {**harness_env, "HARNESS_WORKLOADS": str(workloads)}
    done = run_harness(["build", "--suites", "liar,sleepy"], env)
    assert done.returncode == 0, done.stderr
    assert "built liar" in done.stdout
    assert "harness: building suite 'sleepy': test -x sleepy.py" in done.stderr
    done = run_harness(["build"], env)
    assert done.returncode == 1
    assert "building ghost" in done.stdout
    assert done.stderr.splitlines()[-1] == (
        "harness: error: build of suite 'ghost' failed (exit code 3): echo building ghost; exit 3"
    )
    assert "built liar" not in done.stdout  # it stops at the first failure


def test_a_second_benchmark_is_refused_while_the_lock_is_held(
    harness_env: dict[str, str],
) -> None:
    lock = RunLock(Path(harness_env["HARNESS_LOCK"]), "harness bench --from-the-test")
    with lock:
        done = run_harness(["run", "sleepy", "--strategies", "slow"], harness_env)
        bench = run_harness(["bench"], harness_env)
    assert done.returncode == 3 and bench.returncode == 3
    assert done.stderr == bench.stderr
    assert done.stderr == (
        f"harness: error: another benchmark is running on this machine (pid {os.getpid()}: "
        f"harness bench --from-the-test; lock file {harness_env['HARNESS_LOCK']}): "
        "wait for it to finish, or stop it\n"
    )
    assert not runs_dir(harness_env).exists()
    # Released: the next run takes the lock.
    args = ["run", "sleepy", "--strategies", "slow", "--repeat", "1", "--duration-s", "0.05"]
    done = run_harness([*args, "--warmup-s", "0"], harness_env)
    assert done.returncode == 0, done.stderr


def test_compare_two_runs(tmp_path: Path, harness_env: dict[str, str]) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast", "--repeat", "2"]
    args += ["--duration-s", "0.05", "--warmup-s", "0", "--out", str(tmp_path / "mine")]
    for _ in range(2):
        assert run_harness(args, harness_env).returncode == 0
    run_a, run_b = sorted((tmp_path / "mine").iterdir())
    done = run_harness(["compare", str(run_a), str(run_b / "run.json"), "--json"], harness_env)
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)
    assert entries and all(isinstance(e, dict) for e in entries)
    done = run_harness(["compare", str(run_a), str(tmp_path / "nothing")], harness_env)
    assert done.returncode == 2


def test_doctor_prints_json(harness_env: dict[str, str]) -> None:
    done = run_harness(["doctor", "--json"], harness_env)
    assert done.returncode in (0, 1), done.stderr
    assert isinstance(json.loads(done.stdout), list)


def test_bench_without_suites_is_bad_input(
    tmp_path: Path,
    harness_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HARNESS_WORKLOADS", str(tmp_path))
    code, _, err = invoke(["bench"], capsys)
    assert code == 2
    assert (
        err
        == f"harness: error: no suites under {tmp_path} (a suite is a folder with a suite.toml)\n"
    )


def test_tables_are_not_squeezed_into_80_columns_in_logs(
    harness_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["run", "sleepy", "--strategies", "slow,fast", "--param", "rate=100"]
    args += ["--param", "rate=200", "--repeat", "2", "--duration-s", "0.05", "--warmup-s", "0"]
    done = run_harness(args, harness_env)
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    monkeypatch.setenv("COLUMNS", "100")
    assert consoles.stdout().width == 100  # an explicit width is kept


TALLY = FIXTURES / "v1-suites" / "tally"  # a workload of contract version 1: no `check`
WINDOW = ["--duration-s", "0.05", "--warmup-s", "0"]


def test_a_version_1_workload_without_check_runs(harness_env: dict[str, str]) -> None:
    done = run_harness(["run", str(TALLY), "--repeat", "2", *WINDOW], harness_env)
    assert done.returncode == 0, done.stderr
    doc = only_run(harness_env)
    assert doc["status"] == "complete"
    assert {c["strategy"]: len(c["repeats"]) for c in doc["cells"]} == {"quick": 2, "careful": 2}
    assert not any(c["failures"] for c in doc["cells"])


def test_strategies_given_again_add_up_rather_than_replace(harness_env: dict[str, str]) -> None:
    # Given three times, the strategies are those of all three, once each (as --param is).
    args = ["run", str(TALLY), "--strategies", "careful", "--strategies", "careful"]
    args += ["--strategies", "quick"]
    done = run_harness([*args, "--repeat", "1", *WINDOW], harness_env)
    assert done.returncode == 0, done.stderr
    assert sorted(c["strategy"] for c in only_run(harness_env)["cells"]) == ["careful", "quick"]


def test_a_version_1_workload_s_own_bad_input_stops_the_run_at_its_first_repeat(
    harness_env: dict[str, str],
) -> None:
    args = ["run", str(TALLY), "--strategies", "careful", "--param", "batch=500", *WINDOW]
    done = run_harness([*args, "--repeat", "3"], harness_env)
    assert done.returncode == 2, done.stderr
    # The run has started, so a parallel test's workloads may add the others-running warning.
    (line,) = [x for x in done.stderr.strip().splitlines() if not x.startswith(OTHERS_RUNNING)]
    assert line.startswith("harness: error: ") and "usage:" not in line
    assert "the workload rejected its input: strategy 'careful' counts at most 100" in line


def test_a_workload_of_an_unknown_contract_version_is_refused_in_one_line(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    suite = tmp_path / "tally"
    shutil.copytree(TALLY, suite)
    script = (suite / "tally.py").read_text()
    newer = script.replace("contract_version=1,", "contract_version=3,")
    assert newer != script
    (suite / "tally.py").write_text(newer)
    done = run_harness(["run", str(suite), *WINDOW], harness_env)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"harness: error: `{suite / 'tally.py'} describe`: contract_version 3 is not one this "
        "harness knows (versions 1 and 2, docs/workload-contract.md#versions); a workload of "
        "a newer contract needs a newer harness\n"
    )
    assert not runs_dir(harness_env).exists()


def test_twenty_thousand_values_of_one_parameter_are_refused_at_once(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    """Refused before argparse reads them (its time grows with the square of their number:
    9 s of CPU for these), so the harness's CPU time is its start-up's."""
    args = [arg for i in range(1, 20_001) for arg in ("--param", f"rate={i}")]
    with (tmp_path / "err").open("w+") as err:
        proc = subprocess.Popen([*HARNESS, "run", "sleepy", *args], env=harness_env, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # its own CPU time, as Popen cannot give it
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        err.seek(0)
        stderr = err.read()
    assert proc.returncode == 2
    assert usage.ru_utime + usage.ru_stime < 2.5  # start-up alone is about 0.5 s
    assert stderr == (
        "harness: error: --param rate: 20,000 values, more than the 10,000 cells a run may have "
        "(strategies x scenarios x swept values): sweep fewer values (see `harness run --help`)\n"
    )
    assert not Path(harness_env["HARNESS_RESULTS"]).exists()


def test_a_list_pasted_into_one_value_is_refused_in_a_short_line(
    harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    values = ",".join(str(i) for i in range(1, 20_001))
    code, _, err = invoke(["run", "sleepy", "--param", f"rate={values}"], capsys)
    assert code == 2
    assert err == (
        "harness: error: bad value for parameter 'rate': '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15...' "
        "is not an integer (valid: int 1..1000000)\n"
    )
