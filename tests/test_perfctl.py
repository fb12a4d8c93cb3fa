"""perf's control FIFOs (harness/probes/drivers/perfctl.py) against a stand-in for perf: a
child that answers each command on the ack FIFO as `perf --control fifo:CTL,ACK` does; and the
clean-up when perf cannot be started."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

import pytest

from harness.base.owner import Owner
from harness.probes.drivers import oncpu, perfctl, perfstat
from harness.probes.drivers.perfctl import PerfControl
from harness.probes.drivers.process import ProbeProcess
from harness.probes.probe import ProbeSpec
from harness.profiles.settings import ProfileSettings

pytestmark = pytest.mark.unit
DEADLINE_S = 60.0  # far off: each wait below ends on an event
# Prints each command it reads, then acknowledges it.
FAKE_PERF = """
import sys
ctl, ack = sys.argv[1:]
with open(ctl) as commands, open(ack, "w") as answers:
    while line := commands.readline():
        print(line.strip(), flush=True)
        answers.write("ack\\n")
        answers.flush()
"""


@pytest.fixture
def tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory, where the FIFO folders go."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_command_waits_for_the_ack_and_close_leaves_nothing(tmp_dir: Path) -> None:
    control = PerfControl("harness-test-")
    ctl, ack = control.option.removeprefix("fifo:").split(",")
    assert [Path(ctl).parent, Path(ack).parent] == [control.dir] * 2
    assert control.dir.parent == tmp_dir and control.dir.name.startswith("harness-test-")
    fds = [control.ctl, control.ack]
    perf = ProbeProcess([sys.executable, "-c", FAKE_PERF, ctl, ack])
    try:
        deadline = time.monotonic() + DEADLINE_S
        assert control.command("disable", perf, deadline)
        assert control.command("enable", perf, deadline)
        assert perf.wait_for_line(lambda line: line == "enable", deadline, None)
        assert perf.lines == ["disable", "enable"]
    finally:
        perf.kill()
        control.close()
    assert list(tmp_dir.iterdir()) == []
    for fd in fds:
        assert fd is not None
        with pytest.raises(OSError):
            os.fstat(fd)
    assert not control.command("enable", perf, time.monotonic() + DEADLINE_S)


def test_a_command_fails_as_soon_as_perf_has_exited(tmp_dir: Path) -> None:
    control = PerfControl("harness-test-")
    perf = ProbeProcess([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + DEADLINE_S
        assert not control.command("disable", perf, deadline)
        assert time.monotonic() < deadline  # ended on the exit, not on the deadline
    finally:
        perf.kill()
        control.close()


def test_no_folder_is_left_when_the_fifos_cannot_be_made(
    tmp_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: Path) -> NoReturn:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(os, "mkfifo", refuse)
    with pytest.raises(OSError):
        PerfControl("harness-test-")
    assert list(tmp_dir.iterdir()) == []


@pytest.mark.parametrize("kind", ["perfstat", "oncpu"])
def test_perf_leaves_no_fifo_folder_when_it_cannot_start(
    tmp_dir: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Both perf probes name their FIFO folders after the harness (so that a later one removes
    those of a killed one, run/leftovers.py), and remove them when perf cannot start."""
    folders: list[str] = []

    def no_perf(argv: list[str]) -> NoReturn:
        folders.extend(p.name for p in tmp_dir.iterdir() if p.name != "out")
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])

    monkeypatch.setattr(perfctl, "ProbeProcess", no_perf)
    out_path = tmp_dir / "out" / f"r1-{kind}.json"
    probe: perfstat.PerfStatProbe | oncpu.OncpuProbe
    if kind == "perfstat":
        monkeypatch.setattr(perfstat, "perf_problem", lambda: None)
        monkeypatch.setattr(perfstat, "event_support", lambda: dict.fromkeys(perfstat.EVENTS))
        probe = perfstat.PerfStatProbe(ProbeSpec(kind), out_path)
    else:
        monkeypatch.setattr(oncpu, "perf_problem", lambda: None)
        monkeypatch.setattr(oncpu.inferno, "problem", lambda: None)
        probe = oncpu.OncpuProbe(ProbeSpec(kind), out_path, ProfileSettings())
    probe.start([os.getpid()])
    started = "perf stat" if kind == "perfstat" else "perf"
    assert probe.unavailable == f"cannot start {started}: No such file or directory"
    (folder,) = folders
    assert folder.startswith(perfctl.perf_prefix(Owner.current().token))
    assert sorted(p.name for p in tmp_dir.iterdir()) == ["out"]
    assert list((tmp_dir / "out").iterdir()) == []
