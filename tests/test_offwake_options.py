"""--kernel-stacks: from `harness run`/`bench`/`probe` to the offwake collector's command line
and the run's config, with stand-in collectors (no privilege, no built workload)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from standins import stand_in_collectors

from harness.cli import build_parser
from harness.commands.probe_options import profile_settings
from harness.probes.session import ProbeSession
from harness.probes.spec import parse_probes
from harness.profiles.settings import ProfileSettings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("verb", ["run", "bench"])
def test_run_and_bench_take_kernel_stacks_into_the_settings_and_the_config(verb: str) -> None:
    parser = build_parser(verb)
    base = [verb, "timers"] if verb == "run" else [verb]
    lean = profile_settings(parser.parse_args(base))
    full = profile_settings(parser.parse_args([*base, "--kernel-stacks"]))
    assert (lean.kernel_stacks, full.kernel_stacks) == (False, True)
    assert lean.config()["offwake_kernel_stacks"] is False
    assert full.config()["offwake_kernel_stacks"] is True


@pytest.mark.parametrize("verb", ["run", "bench", "probe"])
def test_the_help_says_what_kernel_stacks_cost(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser(verb).parse_args([verb, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--kernel-stacks" in text
    assert "offwake: also the kernel stacks" in text and "~2 us" in text


def test_kernel_stacks_reach_the_offwake_collector_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The setting reaches offwake's command line and no other collector's."""
    stand_in_collectors(tmp_path, ("offwake", "sched"), monkeypatch)
    specs = parse_probes("sched,offwake")
    for kernel_stacks in (False, True):
        profile = ProfileSettings(kernel_stacks=kernel_stacks)
        session = ProbeSession(specs, tmp_path / "raw", 1, None, profile=profile)
        session.on_ready([os.getpid()])
        session.on_measure_start()
        session.on_measure_end()
        session.close()
        offwake = (tmp_path / "offwake.args").read_text().split()
        sched = (tmp_path / "sched.args").read_text().split()
        assert offwake[:2] == ["--pid", str(os.getpid())]
        assert ("--kernel-stacks" in offwake) is kernel_stacks
        assert "--kernel-stacks" not in sched
