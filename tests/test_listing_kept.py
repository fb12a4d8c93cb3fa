"""`harness list` keeps the text of its tables (harness/listing.py, print_suites_kept) and
lays them out again when the suites, the console or the code that draws them change."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
from conftest import FIXTURES, HARNESS

from harness import listing
from harness.cli import main

pytestmark = pytest.mark.unit


@pytest.fixture
def drawn(
    tmp_path: Path, harness_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> list[int]:
    """sleepy alone in the workloads folder; the list counts the layouts drawn."""
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "sleepy").symlink_to(FIXTURES / "sleepy")
    monkeypatch.setenv("HARNESS_WORKLOADS", str(workloads))
    calls: list[int] = []
    draw = listing.print_suites

    def counted(*args: object, **kwargs: object) -> None:
        calls.append(1)
        draw(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(listing, "print_suites", counted)
    return calls


def listed(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["list"]) == 0
    return capsys.readouterr().out


def test_the_kept_text_is_the_text_drawn(
    drawn: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    first = listed(capsys)
    assert "sleepy" in first and "strategies" in first
    assert listed(capsys) == first == listed(capsys)
    assert len(drawn) == 1


def test_another_width_is_drawn_again(
    drawn: list[int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = listed(capsys)
    monkeypatch.setenv("COLUMNS", "60")
    narrow = listed(capsys)
    assert max(map(len, narrow.splitlines())) <= 60 < max(map(len, wide.splitlines()))
    assert listed(capsys) == narrow
    monkeypatch.delenv("COLUMNS")
    assert listed(capsys) == wide
    assert len(drawn) == 3


def test_a_changed_suite_is_drawn_again(
    drawn: list[int],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed(capsys)
    more = tmp_path / "more"
    (more / "sleepy-too").mkdir(parents=True)
    manifest = (FIXTURES / "sleepy" / "suite.toml").read_text()
    (more / "sleepy-too" / "suite.toml").write_text(
        manifest.replace('name = "sleepy"', 'name = "sleepy-too"').replace(
            'binary = "sleepy.py"', f'binary = "{FIXTURES / "sleepy" / "sleepy.py"}"'
        )
    )
    monkeypatch.setenv("HARNESS_SUITES_PATH", str(more))
    assert "sleepy-too" in listed(capsys)
    assert len(drawn) == 2


def test_changed_drawing_code_is_drawn_again(
    drawn: list[int],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A module of the drawing code (one of tmp_path here, not the checkout's) is edited."""
    code = tmp_path / "drawing.py"
    code.write_text("WIDTH = 1\n")
    module = types.ModuleType("drawing")
    module.__file__ = str(code)
    monkeypatch.setitem(sys.modules, "drawing", module)
    monkeypatch.setattr(listing, "_DRAWN_BY", (*listing._DRAWN_BY, "drawing"))
    listed(capsys)
    listed(capsys)
    code.write_text("WIDTH = 2\n")
    listed(capsys)
    assert len(drawn) == 2


def test_a_closed_pipe_ends_the_list_as_rich_does(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    """`harness list | head`: exit 1 and no traceback, the kept text's write as rich's print."""
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "sleepy").symlink_to(FIXTURES / "sleepy")
    env = {**harness_env, "HARNESS_WORKLOADS": str(workloads)}
    for _ in range(2):  # drawn, then kept
        listing = subprocess.Popen(
            [*HARNESS, "list"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert listing.stdout is not None and listing.stderr is not None
        listing.stdout.close()
        assert listing.wait(timeout=60) == 1
        assert listing.stderr.read() == b""
        listing.stderr.close()
