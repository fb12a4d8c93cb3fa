"""Stand-in collectors: shell scripts in place of bpf/build's tools that write the arguments
they were given to TMP/<name>.args and say they are attached, so that a test sees what the
harness would pass a collector, with no privilege and nothing built."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from harness.probes.drivers import collector


def stand_in_collectors(
    tmp_path: Path, names: Iterable[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    for name in names:
        script = build / name
        script.write_text(
            f'#!/bin/sh\necho "$@" > {tmp_path}/{name}.args\necho \'{{"event":"attached"}}\'\n'
        )
        script.chmod(0o755)
    monkeypatch.setenv("HARNESS_BPF_BUILD", str(build))
    monkeypatch.setattr(collector, "collector_problem", lambda name: None)
