"""The fio suite's wrapper driving the real fio on a small scratch file in a tmpfs: the
contract's events with the gate, the result's fields, a rate held (counts bounded, not wall
time), fio's own message for an option it rejects (exit 2, one line), a bad job file, and
fio dying with the wrapper."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import mounted_tmpfs
from requirements import need, tool_problem

pytestmark = pytest.mark.e2e

SUITE = Path(__file__).resolve().parent.parent / "workloads" / "fio"
BENCH = SUITE / "fio-bench"
SIZE_MB = 16


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """The job's file, in a tmpfs: this VM's virtual disk stalls for longer than a window
    when the machine is busy, and a window with no IO tests nothing."""
    need(tool_problem("fio", "fio"))
    with mounted_tmpfs(tmp_path / "scratch", 2 * SIZE_MB) as mount:
        path = mount / f"data-{SIZE_MB}m"
        with path.open("wb") as out:
            for _ in range(SIZE_MB):
                out.write(os.urandom(1 << 20))
        need(_direct_io_problem(path))
        yield path


def _direct_io_problem(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as err:
        return f"O_DIRECT refused in {path.parent}: {err.strerror}"
    os.close(fd)
    return None


def _env(scratch: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_SCRATCH_FILE"}
    if scratch is not None:
        env["HARNESS_SCRATCH_FILE"] = str(scratch)
    return env


def _bench(
    command: str, strategy: str, *params: str, scratch: Path | None, duration: str = "1"
) -> subprocess.CompletedProcess[str]:
    args = [str(BENCH), command, "--strategy", strategy, "--duration-s", duration]
    args += ["--warmup-s", "0.3", "--param", f"file_size_mb={SIZE_MB}"]
    for param in params:
        args += ["--param", param]
    return subprocess.run(
        args, env=_env(scratch), capture_output=True, text=True, timeout=120, check=False
    )


def _argv(strategy: str, duration: str, warmup: str, *more: str) -> list[str]:
    return [
        *(str(BENCH), "run", "--strategy", strategy, "--duration-s", duration),
        *("--warmup-s", warmup, "--param", f"file_size_mb={SIZE_MB}", *more),
    ]


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_gated_run_prints_the_events_in_order_and_fio_is_the_ready_pid(scratch: Path) -> None:
    proc = subprocess.Popen(
        _argv("randread-4k", "1", "0.5", "--gate"),
        env=_env(scratch),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    ready = json.loads(proc.stdout.readline())
    assert ready["event"] == "ready"
    (pid,) = ready["pids"]
    # Stopped at the gate, before fio (or any I/O) starts: the process exists, and is fio
    # itself (what probes that read its executable see), not traced any more, and has not run
    # fio's code yet (fio's signal handlers are not installed; exec cleared the shell's).
    assert Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "T"
    fio = shutil.which("fio")
    assert fio is not None
    assert Path(f"/proc/{pid}/exe").resolve() == Path(fio).resolve()
    status = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    assert (status["TracerPid"], status["SigCgt"]) == ("0", "0000000000000000"), status
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    events = _events(out)
    assert [e["event"] for e in events] == ["measure_start", "measure_end", "result"]
    result = events[-1]
    assert result["strategy"] == "randread-4k"
    assert result["fio_version"].startswith("fio-")
    assert result["ops"] == result["read"]["ops"] > 0
    assert result["write"]["ops"] == result["write"]["iops"] == 0
    assert "latency_ns" not in result["write"]
    assert result["iops"] == pytest.approx(result["ops"] / result["window_s"])
    latency = result["latency_ns"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["p999"]
    assert latency["p999"] <= latency["max"]
    assert result["bw_bytes"] == pytest.approx(result["read"]["bw_bytes"])
    assert result["cpu_ns_per_op"] > 0
    assert sum(result["clat_hist"]["counts"]) == result["ops"]
    # fio's window, between its two snapshots, is the wrapper's (--duration-s 1 from event
    # to event, give or take its wake-ups: 0.25 s for a busy machine) shifted by how long
    # after each event fio took its snapshot (no bound on that: a busy machine delays fio's
    # helper thread); a window holding the 0.5 s warm-up would be past the bound.
    lag = result["snapshot_lag_ms"]
    assert lag["start"] >= 0 and lag["end"] >= 0
    assert 1 - 0.25 - lag["start"] / 1000 <= result["window_s"] <= 1 + 0.25 + lag["end"] / 1000
    assert result["params"]["file_size_mb"] == SIZE_MB


def test_poisson_rate_holds_rate_iops(scratch: Path) -> None:
    done = _bench("run", "poisson-rate", "rate_iops=400", scratch=scratch, duration="2")
    assert done.returncode == 0, done.stderr
    result = _events(done.stdout)[-1]
    assert result["params"]["rate_iops"] == "400"
    # 400/s over fio's window: Poisson counts of ~800 have a standard deviation of ~28
    # (+15% is over 4 of them); -25% for a busy machine's lag (fio's rate does not run
    # ahead of its schedule).
    expected = 400 * result["window_s"]
    assert 0.75 * expected <= result["ops"] <= 1.15 * expected


def test_mixed_directions_are_summed_and_reported_each(scratch: Path) -> None:
    done = _bench(
        "run", "randread-4k", "rw=randrw", "rwmixread=50", "ioengine=psync", "numjobs=2",
        scratch=scratch,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = _events(done.stdout)[-1]
    assert result["read"]["ops"] > 0 and result["write"]["ops"] > 0
    assert result["ops"] == result["read"]["ops"] + result["write"]["ops"]
    assert result["iops"] == pytest.approx(result["read"]["iops"] + result["write"]["iops"])


def test_an_option_fio_rejects_is_bad_input_with_fios_message(scratch: Path) -> None:
    for command in ("check", "run"):
        done = _bench(command, "randread-4k", "rate_iops=lots", scratch=scratch)
        assert done.returncode == 2
        assert done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert "fio: failed parsing rate_iops=lots" in line


def test_check_passes_silently(scratch: Path) -> None:
    for strategy in ("randread-4k", "seqwrite-1m", "poisson-rate"):
        done = _bench("check", strategy, scratch=None)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_bad_job_file_is_bad_input_in_one_line(scratch: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.fio"
    done = _bench("run", "custom", f"job_file={missing}", scratch=scratch)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert str(missing) in line and "No such file" in line
    empty = tmp_path / "global-only.fio"
    empty.write_text("[global]\nrw=read\n")
    done = _bench("check", "custom", f"job_file={empty}", scratch=None)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and "defines no job" in done.stderr


def test_a_users_job_file_runs(scratch: Path, tmp_path: Path) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[mine]\nrw=read\nbs=64k\nioengine=psync\nsize=1m\n")
    done = _bench("run", "custom", f"job_file={job}", scratch=scratch)
    assert done.returncode == 0, done.stderr
    result = _events(done.stdout)[-1]
    # size=1m of the job file is overridden by the scratch file's size; time_based goes on
    assert result["read"]["io_bytes"] > 1 << 20


def test_without_a_scratch_file_run_is_bad_input(scratch: Path) -> None:
    done = _bench("run", "randread-4k", scratch=None)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "HARNESS_SCRATCH_FILE is not set" in line


def _start_fio(env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    """fio-bench running randread-4k for 30 s, once its window has begun; and fio's pid."""
    proc = subprocess.Popen(
        _argv("randread-4k", "30", "0"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    (pid,) = json.loads(proc.stdout.readline())["pids"]
    assert json.loads(proc.stdout.readline())["event"] == "measure_start"  # fio runs
    return proc, pid


def _sigkill_and_wait_for_fio(proc: subprocess.Popen[str], pid: int) -> None:
    """SIGKILL the wrapper; fio must die with it (its parent-death signal) within 10 s."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(500):
        if not Path(f"/proc/{pid}").exists() or _state(pid) == "Z":
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"fio (pid {pid}) outlived the wrapper")


def test_fio_dies_with_the_wrapper(scratch: Path) -> None:
    _sigkill_and_wait_for_fio(*_start_fio(_env(scratch)))


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (OSError, IndexError):
        return "gone"


def test_a_sigkilled_wrapper_leaves_nothing_outside_the_scratch_files_folder(
    scratch: Path, tmp_path: Path
) -> None:
    # Its folder is beside the scratch file: under the harness, harness-scratch-<run_id>/,
    # which the harness removes after a crash too; nothing in $TMPDIR.
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    before = set(scratch.parent.iterdir())
    proc, pid = _start_fio({**_env(scratch), "TMPDIR": str(tmpdir)})
    (work,) = set(scratch.parent.iterdir()) - before
    assert work.name.startswith("fio-bench-") and (work / "job.fio").is_file()
    _sigkill_and_wait_for_fio(proc, pid)
    assert list(tmpdir.iterdir()) == []
    assert set(scratch.parent.iterdir()) - before == {work}


def test_a_hostile_job_file_or_options_leave_a_decoy_untouched(
    scratch: Path, tmp_path: Path
) -> None:
    decoy = tmp_path / "decoy"
    decoy.write_bytes(b"40 bytes that no fio job may overwrite..")
    job = tmp_path / "hostile.fio"
    job.write_text(f"[global]\nfilename = {decoy}\n[hostile]\nrw=write\nbs=1m\n")
    cases = [
        ("custom", f"job_file={job}", "'filename'"),
        ("randread-4k", f"fio_options=rw=write write_iolog={decoy}", "'write_iolog'"),
        ("randread-4k", f"fio_options=rw=write FileName={decoy}", "'FileName'"),
        ("randread-4k", "ioengine=filedelete", "'filedelete'"),
    ]
    for strategy, param, named in cases:
        for command in ("check", "run"):
            done = _bench(command, strategy, param, scratch=scratch)
            assert (done.returncode, done.stdout) == (2, ""), done.stderr
            (line,) = done.stderr.splitlines()
            assert named in line and "not allowed here" in line
    assert decoy.read_bytes() == b"40 bytes that no fio job may overwrite.."
