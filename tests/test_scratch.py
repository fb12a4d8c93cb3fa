"""Scratch files (suite.toml [scratch]): the harness writes each cell's file whole before its
repeats and removes it after the run, after Ctrl-C, SIGTERM or SIGHUP, after a crash of the
workload, and through the guardian or the recovery of an abandoned run; a folder that cannot
take the files is refused before anything starts, and a disk that fills up during the run
ends it `failed` in one line, with nothing of the scratch files left. The scratchy fixture
suite (tests/fixtures/scratch-suites) reads its file back, crashes, hangs or fills the disk
on request."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_harness, runs_dir, start_harness
from rundocs import schema_problems

from harness.base.stop import StopFlag
from harness.errors import BadInput
from harness.run import abandoned, scratch
from harness.run.scratch import FOLDER_PREFIX, MIB, File, write_file
from harness.run.scratchroom import margin
from harness.rundoc import jsonfile
from harness.suites import load_suite

SCRATCHY = FIXTURES / "scratch-suites" / "scratchy"
SHORT = ["--duration-s", "0.1", "--warmup-s", "0"]
WAIT_S = 60.0  # for the machine: a busy 2-core VM starts Python slowly


@pytest.fixture
def env(harness_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**harness_env, "SCRATCHY_LOG": str(tmp_path / "scratchy.log")}


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"{what}: not within {timeout:g} s"
        time.sleep(0.01)


def scratchy(*args: str) -> list[str]:
    """`harness run scratchy`, strategy readback unless `args` choose."""
    chosen = [] if "--strategies" in args else ["--strategies", "readback"]
    return ["run", str(SCRATCHY), *SHORT, *chosen, *args]


def log(env: dict[str, str]) -> list[dict[str, Any]]:
    """One entry per `scratchy.py run`: pid, strategy, path, size, allocated, inode."""
    path = Path(env["SCRATCHY_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def the_run(env: dict[str, str]) -> tuple[Path, dict[str, Any]]:
    (folder,) = runs_dir(env).iterdir()
    return folder, json.loads((folder / "run.json").read_text())


def default_dir(env: dict[str, str]) -> Path:
    return Path(env["HARNESS_RESULTS"]) / "scratch"


def scratch_folders(*dirs: Path) -> list[Path]:
    return [p for d in dirs if d.is_dir() for p in d.glob(f"{FOLDER_PREFIX}*")]


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("harness: error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def refused(env: dict[str, str], *args: str) -> str:
    """The one error line of a scratchy run the harness refuses with exit 2."""
    done = run_harness(scratchy(*args), env)
    assert done.returncode == 2, done.stderr
    return one_error_line(done.stderr)


def assert_nothing_started(env: dict[str, str], *dirs: Path) -> None:
    assert not runs_dir(env).exists() or not any(runs_dir(env).iterdir())
    assert log(env) == []  # no `scratchy.py run` at all
    assert scratch_folders(default_dir(env), *dirs) == []


# --- suite.toml [scratch] ---------------------------------------------------------------


def manifest(tmp_path: Path, scratch_table: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(f'name = "s"\nbinary = "s.py"\n{scratch_table}')
    return path


@pytest.mark.unit
def test_the_scratch_table_is_read(tmp_path: Path) -> None:
    suite = load_suite(manifest(tmp_path, '[scratch]\nsize_param = "mb"\ndir_param = "dir"\n'))
    assert suite.scratch is not None
    assert (suite.scratch.size_param, suite.scratch.dir_param) == ("mb", "dir")
    suite = load_suite(manifest(tmp_path, '[scratch]\nsize_param = "mb"\n'))
    assert suite.scratch is not None and suite.scratch.dir_param is None
    assert load_suite(manifest(tmp_path, "")).scratch is None


@pytest.mark.unit
@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('scratch = "yes"\n', "key 'scratch': expected a table ([scratch]), got 'yes'"),
        ("[scratch]\n", "key 'scratch.size_param': missing (a string is required)"),
        ("[scratch]\nsize_param = 64\n", "key 'scratch.size_param': expected a non-empty string"),
        (
            '[scratch]\nsize_param = "mb"\ndir_param = ""\n',
            "key 'scratch.dir_param': expected a non-empty string, got ''",
        ),
        (
            '[scratch]\nsize_param = "mb"\nfolder = "x"\n',
            "key 'scratch.folder': unknown key (valid: dir_param, size_param)",
        ),
    ],
)
def test_a_bad_scratch_table_is_named(tmp_path: Path, table: str, problem: str) -> None:
    with pytest.raises(BadInput) as caught:
        load_suite(manifest(tmp_path, table))
    assert str(caught.value).startswith(f"{tmp_path / 'suite.toml'}: {problem}"), caught.value


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            'size_param = "label"',
            "key 'scratch.size_param': 'label' is not an int parameter of the suite's describe "
            "(int parameters: file_size_mb)",
        ),
        (
            'dir_param = "file_size_mb"',
            "key 'scratch.dir_param': 'file_size_mb' is not a string parameter of the suite's "
            "describe (string parameters: dir, label)",
        ),
    ],
)
def test_a_scratch_table_that_does_not_match_describe_is_refused(
    env: dict[str, str], tmp_path: Path, line: str, problem: str
) -> None:
    suite = tmp_path / "scratchy"
    shutil.copytree(SCRATCHY, suite)
    toml = (suite / "suite.toml").read_text()
    key = line.split(" ")[0]
    edited = "\n".join(line if row.startswith(f"{key} =") else row for row in toml.splitlines())
    (suite / "suite.toml").write_text(edited)
    done = run_harness(["run", str(suite), *SHORT], env)
    assert done.returncode == 2, done.stderr
    assert one_error_line(done.stderr) == f"harness: error: {suite / 'suite.toml'}: {problem}"
    assert_nothing_started(env)


# --- writing the file ---------------------------------------------------------------------


class StopAfter(StopFlag):
    """A stop signal that arrives after `polls` looks at the flag (a Ctrl-C mid-write)."""

    def __init__(self, polls: int) -> None:
        super().__init__()
        self.polls = polls

    @property
    def requested(self) -> bool:
        self.polls -= 1
        return self.polls < 0


@pytest.mark.unit
def test_the_file_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "data-3m"
    assert write_file(path, 3 * MIB, StopFlag(), File(tmp_path, 3, False))
    stat = path.stat()
    assert stat.st_size == 3 * MIB and stat.st_blocks * 512 >= 3 * MIB  # no holes
    with path.open("rb") as f:
        assert f.read(MIB) == f.read(MIB) != b"\0" * MIB  # a pattern, not zeros


@pytest.mark.unit
def test_a_stop_signal_while_the_file_is_written_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "data-8m"
    assert not write_file(path, 8 * MIB, StopAfter(2), File(tmp_path, 8, False))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.unit
def test_the_margin_is_5_percent_at_least_16_mib_or_a_16th_of_a_small_filesystem() -> None:
    assert margin(64 * MIB, 100 << 30) == 16 * MIB
    assert margin(1024 * MIB, 100 << 30) == int(1024 * MIB * 0.05)
    assert margin(1 * MIB, 2 * MIB) == 128 * 1024


# --- a run's files -----------------------------------------------------------------------


@pytest.mark.e2e
def test_each_cell_gets_its_whole_file_and_the_run_removes_them(
    env: dict[str, str], tmp_path: Path
) -> None:
    own = tmp_path / "own"
    own.mkdir()
    sweep = ["--param", "file_size_mb=1", "--param", "file_size_mb=2"]
    folders = ["--param", "dir=", "--param", f"dir={own}"]
    done = run_harness(scratchy("--repeat", "2", *sweep, *folders), env)
    assert done.returncode == 0, done.stderr
    _, doc = the_run(env)
    run_id = doc["run_id"]
    expected = [
        {"dir": str(d), "size_mb": mb, "path": f"{d}/{FOLDER_PREFIX}{run_id}/data-{mb}m"}
        for mb in (1, 2)
        for d in (default_dir(env), own)
    ]
    assert doc["config"]["scratch"] == expected
    assert schema_problems(doc) == []  # an optional key of schema_version 2
    assert jsonfile.as_json(jsonfile.load_run(the_run(env)[0])) == doc
    entries = log(env)
    assert len(entries) == 8  # 4 cells x 2 repeats
    for entry in entries:
        mb = int(entry["path"].removesuffix("m").rsplit("-", 1)[1])
        assert entry["size"] == entry["allocated"] == mb * MIB, entry
    inodes = {e["path"]: {f["inode"] for f in entries if f["path"] == e["path"]} for e in entries}
    assert all(len(found) == 1 for found in inodes.values())  # written once, then reused
    assert {e["path"] for e in entries} == {e["path"] for e in expected}
    assert scratch_folders(default_dir(env), own) == []
    assert not default_dir(env).exists()  # made for the run, and empty after it
    assert "writing scratch file" in done.stderr


@pytest.mark.e2e
def test_a_crashing_workload_leaves_no_scratch_file(env: dict[str, str]) -> None:
    done = run_harness(scratchy("--strategies", "crash", "--repeat", "2"), env)
    assert done.returncode == 1, done.stderr
    _, doc = the_run(env)
    assert doc["status"] == "failed"
    [cell] = doc["cells"]
    assert [f["error"] for f in cell["failures"]] == [
        "exited with code 1 (after 'ready'); stderr: scratchy: crashed (simulated)"
    ] * 2
    assert len(log(env)) == 2 and all(e["size"] == MIB for e in log(env))
    assert scratch_folders(default_dir(env)) == []


def start_hanging(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """A harness whose workload waits in its measured window until it is killed."""
    window = tmp_path / "window"
    proc = start_harness(
        scratchy("--strategies", "hang", "--repeat", "1", *args),
        {**env, "SCRATCHY_WINDOW": str(window)},
        own_session=True,
    )
    wait_for(window.exists, WAIT_S, "the measured window did not start")
    return proc


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_removes_the_scratch_files(
    env: dict[str, str], tmp_path: Path, signum: signal.Signals
) -> None:
    proc = start_hanging(env, tmp_path)
    [entry] = log(env)
    assert Path(entry["path"]).is_file()
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 130, stderr
    assert the_run(env)[1]["status"] == "interrupted"
    assert not Path(entry["path"]).parent.exists()
    assert scratch_folders(default_dir(env)) == []


@pytest.mark.e2e
def test_a_stop_signal_while_the_scratch_file_is_written_leaves_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    """SIGINT as soon as the harness says it writes the file (256 MiB, synced: it is still at
    it, so far always); whether it was, or the workload had started, nothing is left."""
    own = tmp_path / "own"
    own.mkdir()
    args = ["--repeat", "1", "--param", "file_size_mb=256", "--param", f"dir={own}"]
    proc = start_harness(scratchy(*args), env, own_session=True)
    assert proc.stderr is not None
    said = next((line for line in proc.stderr if line.startswith("writing scratch file")), None)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=WAIT_S)
    assert said is not None and proc.returncode == 130, stderr
    assert the_run(env)[1]["status"] == "interrupted"
    assert list(own.iterdir()) == []


@pytest.mark.e2e
def test_the_guardian_removes_the_scratch_files_of_a_killed_harness(
    env: dict[str, str], tmp_path: Path
) -> None:
    proc = start_hanging(env, tmp_path)
    [entry] = log(env)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=WAIT_S)
    wait_for(lambda: the_run(env)[1]["status"] == "abandoned", WAIT_S, "not marked")
    reason = the_run(env)[1]["abandoned_reason"]
    assert reason.endswith(", 1 scratch folder removed"), reason
    assert not Path(entry["path"]).parent.exists()


@pytest.mark.e2e
def test_recovery_removes_the_scratch_files_of_a_dead_owner(env: dict[str, str]) -> None:
    done = run_harness(scratchy("--repeat", "1"), env)
    assert done.returncode == 0, done.stderr
    folder, doc = the_run(env)
    # As a harness SIGKILLed with its guardian leaves it: running, its scratch file there.
    doc["status"], doc["finished_at"] = "running", None
    doc["owner"] = {**doc["owner"], "start_ticks": doc["owner"]["start_ticks"] + 1}
    (folder / "run.json").write_text(json.dumps(doc))
    [recorded] = doc["config"]["scratch"]
    path = Path(recorded["path"])
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    other = path.parent.with_name(f"{FOLDER_PREFIX}another-run")  # not this run's: kept
    other.mkdir()
    [line] = abandoned.recover(runs_dir(env), None)
    assert line.endswith("0 partial files removed, 1 scratch folder removed"), line
    assert not path.parent.exists() and other.is_dir()
    assert scratch.remove_recorded([str(path)], doc["run_id"]) == 0


# --- before the run: the folder ----------------------------------------------------------


@pytest.mark.e2e
def test_a_missing_dir_is_refused_before_anything_starts(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    line = refused(env, "--param", f"dir={missing}")
    assert line == (
        f"harness: error: scratch folder {missing} (suite 'scratchy') does not exist: create "
        "it or choose another"
    )
    assert_nothing_started(env)
    assert not missing.exists()


@pytest.mark.e2e
def test_a_dir_that_is_a_file_is_refused(env: dict[str, str], tmp_path: Path) -> None:
    file = tmp_path / "plain"
    file.write_text("")
    line = refused(env, "--param", f"dir={file}")
    assert f"{file} is not a directory" in line
    assert_nothing_started(env)


@pytest.mark.e2e
def test_a_read_only_dir_is_refused(env: dict[str, str], tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    line = refused(env, "--param", f"dir={tmpfs}")
    assert line.endswith(f"cannot write in {tmpfs}: Read-only file system"), line
    assert_nothing_started(env)


@pytest.mark.e2e
def test_a_dir_with_too_little_room_is_refused_before_anything_starts(
    env: dict[str, str], tmpfs: Path
) -> None:
    """2 MiB of scratch files do not fit a 2 MiB tmpfs with the margin."""
    line = refused(env, "--param", f"dir={tmpfs}", "--param", "file_size_mb=2")
    assert line == (
        f"harness: error: not enough room for the scratch files in {tmpfs}: 2 MiB free on its "
        "filesystem, the run needs about 2.12 MiB there (2 MiB of scratch files + 128 KiB "
        "margin); free some space or choose another folder with --param dir=DIR"
    )
    assert_nothing_started(env, tmpfs)
    assert list(tmpfs.iterdir()) == []


@pytest.mark.e2e
def test_results_on_a_small_filesystem_count_the_run_directory_too(
    env: dict[str, str], tmpfs: Path
) -> None:
    """The default folder is <results>/scratch: it shares the run directory's filesystem."""
    env = {**env, "HARNESS_RESULTS": str(tmpfs / "results")}
    line = refused(env, "--param", "file_size_mb=2")
    assert line.startswith(f"harness: error: not enough room for the scratch files in {tmpfs}/")
    assert "for the run directory); free some space or" in line, line
    assert_nothing_started(env)
    assert list(tmpfs.iterdir()) == []


@pytest.mark.e2e
def test_results_on_a_small_filesystem_with_room_for_both_complete(
    env: dict[str, str], tmpfs: Path
) -> None:
    env = {**env, "HARNESS_RESULTS": str(tmpfs / "results")}
    done = run_harness(scratchy("--repeat", "2"), env)
    assert done.returncode == 0, done.stderr
    _, doc = the_run(env)
    assert doc["status"] == "complete" and [e["size"] for e in log(env)] == [MIB, MIB]
    assert not default_dir(env).exists()


# --- during the run: a full disk ---------------------------------------------------------


@pytest.mark.e2e
def test_a_disk_that_fills_up_ends_the_run_failed_without_leftovers(
    env: dict[str, str], tmpfs: Path
) -> None:
    """The first repeat's workload deletes its file and fills the tmpfs: the file the second
    repeat needs cannot be written again."""
    done = run_harness(
        scratchy("--strategies", "steal", "--repeat", "2", "--param", f"dir={tmpfs}"), env
    )
    assert done.returncode == 1, done.stderr
    folder, doc = the_run(env)
    path = f"{tmpfs}/{FOLDER_PREFIX}{doc['run_id']}/data-1m"
    assert one_error_line(done.stderr) == (
        f"harness: error: cannot write the scratch file {path} (1 MiB): No space left on device; "
        f"{folder / 'run.json'} says failed"
    )
    assert doc["status"] == "failed" and doc["finished_at"]
    assert doc["error"].startswith(f"cannot write the scratch file {path}")
    assert len(doc["cells"][0]["repeats"]) == 1  # the repeat before the disk filled up
    assert [p.name for p in folder.rglob(".*")] == []  # no reserve, no temporary file
    assert list(tmpfs.iterdir()) == []  # the workload's filler went with the folder


@pytest.mark.e2e
def test_a_full_disk_under_the_run_directory_ends_the_run_failed_without_leftovers(
    env: dict[str, str], tmpfs: Path
) -> None:
    """--out on the 2 MiB tmpfs, the scratch file elsewhere: run.json outgrows the tmpfs
    (each repeat's result carries a 100 KiB label), as tests/test_writes.py's sleepy runs."""
    out = tmpfs / "runs"
    label = "x" * (100 * 1024)
    args = ["--repeat", "30", "--param", f"label={label}", "--out", str(out)]
    done = run_harness(scratchy(*args), env)
    assert done.returncode == 1, done.stderr[-2000:]
    line = one_error_line(done.stderr)
    [run_dir] = list(out.iterdir())
    assert line.startswith(f"harness: error: cannot write {run_dir}/"), line
    assert "No space left on device" in line and line.endswith("run.json says failed")
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "failed" and "No space left on device" in doc["error"]
    assert log(env) and scratch_folders(default_dir(env)) == []


@pytest.mark.e2e
def test_bench_plans_and_runs_a_suite_with_scratch_files(env: dict[str, str]) -> None:
    done = run_harness(["bench", "--suites", str(SCRATCHY)], env)
    assert done.returncode == 0, done.stderr
    assert f"  scratch files in {default_dir(env)}: scratchy 1 MiB\n" in done.stdout
    _, doc = the_run(env)
    assert doc["status"] == "complete" and len(doc["config"]["scratch"]) == 1
    assert [e["size"] for e in log(env)] == [MIB]
    assert not default_dir(env).exists()
