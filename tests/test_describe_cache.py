"""`harness list` keeps each suite's describe output (harness/describe_cache.py) and describes
a suite again as soon as a file it may depend on changes: its binary, its suite.toml, any file
under its folder but those of a cache folder (CACHEDIR.TAG)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import describe_cache
from harness.cli import main

pytestmark = pytest.mark.unit

# A describe that counts its calls (in $DESCRIBES, outside the suite's folder) and names one
# strategy, the one its script was written with.
SCRIPT = """#!/bin/sh
echo described >> "$DESCRIBES"
cat <<'EOF'
{"strategies": [{"name": "%s"}], "scenarios": [{"name": "s"}], "default_scenario": "s"}
EOF
"""


class Suite:
    """A suite `kept` in a workloads folder of its own, its binary at `binary` (relative)."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: str) -> None:
        self.folder = tmp_path / "workloads" / "kept"
        self.binary = self.folder / binary
        self.binary.parent.mkdir(parents=True)
        (self.folder / "suite.toml").write_text(f'name = "kept"\nbinary = "{binary}"\n')
        self.write_binary("alpha")
        self.log = tmp_path / "describes.log"
        monkeypatch.setenv("HARNESS_WORKLOADS", str(self.folder.parent))
        monkeypatch.setenv("DESCRIBES", str(self.log))

    def write_binary(self, strategy: str) -> None:
        self.binary.write_text(SCRIPT % strategy)
        self.binary.chmod(0o755)

    def listed(self, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
        """`harness list --json`'s entry of the suite."""
        assert main(["list", "--json"]) == 0
        (entry,) = json.loads(capsys.readouterr().out)
        return dict(entry)

    def strategies(self, capsys: pytest.CaptureFixture[str]) -> list[str]:
        return [s["name"] for s in self.listed(capsys)["strategies"]]

    def described(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch, harness_env: dict[str, str]) -> None:
    """Files count as settled at once (their times are not set back: the change time
    cannot be)."""
    monkeypatch.setattr(describe_cache, "SETTLED_S", 0.0)


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled: None) -> Suite:
    return Suite(tmp_path, monkeypatch, "kept.sh")


def test_a_suite_is_described_once_while_nothing_changes(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    first = suite.listed(capsys)
    assert suite.listed(capsys) == first == suite.listed(capsys)
    assert [s["name"] for s in first["strategies"]] == ["alpha"]
    assert suite.described() == 1


def test_a_changed_binary_is_described_again(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    assert suite.strategies(capsys) == ["alpha"]
    suite.write_binary("bravo")  # the same size: the times and the inode tell
    assert suite.strategies(capsys) == ["bravo"]
    assert suite.strategies(capsys) == ["bravo"]
    assert suite.described() == 2


@pytest.mark.parametrize("change", ["new file", "changed file", "removed file", "new folder"])
def test_a_change_under_the_suites_folder_describes_it_again(
    suite: Suite, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    data = suite.folder / "lib" / "data.txt"
    data.parent.mkdir()
    data.write_text("one")
    suite.strategies(capsys)
    if change == "new file":
        (suite.folder / "lib" / "more.txt").write_text("")
    elif change == "changed file":
        data.write_text("two")
    elif change == "removed file":
        data.unlink()
    else:
        (suite.folder / "lib" / "sub").mkdir()
    suite.strategies(capsys)
    assert suite.described() == 2


def test_a_changed_suite_toml_describes_it_again(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.strategies(capsys)
    manifest = suite.folder / "suite.toml"
    manifest.write_text(manifest.read_text() + 'description = "now described"\n')
    assert suite.listed(capsys)["description"] == "now described"
    assert suite.described() == 2


def test_a_cache_folder_is_left_out_but_the_binary_in_it_is_not(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settled: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = Suite(tmp_path, monkeypatch, "target/release/kept")
    (suite.folder / "target" / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n"
    )
    suite.strategies(capsys)
    (suite.folder / "target" / "release" / "build-artifact.o").write_text("x")
    assert suite.strategies(capsys) == ["alpha"]
    assert suite.described() == 1
    suite.write_binary("bravo")
    assert suite.strategies(capsys) == ["bravo"]
    assert suite.described() == 2


def test_files_changed_within_the_settling_time_are_described_every_time(
    suite: Suite, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(describe_cache, "SETTLED_S", 3600.0)
    for _ in range(3):
        assert suite.strategies(capsys) == ["alpha"]
    assert suite.described() == 3


def test_a_describe_that_changes_the_folder_is_not_kept(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    script = suite.binary.read_text().replace(
        "cat <<", 'date +%N > "$(dirname "$0")/stamp"\ncat <<'
    )
    suite.binary.write_text(script)
    for _ in range(3):
        assert suite.strategies(capsys) == ["alpha"]
    assert suite.described() == 3


def test_a_failing_describe_is_not_kept(suite: Suite, capsys: pytest.CaptureFixture[str]) -> None:
    good = suite.binary.read_text()
    suite.binary.write_text(good.replace("cat <<", "exit 3\ncat <<"))
    for _ in range(2):
        assert main(["list", "--json"]) == 1
        (entry,) = json.loads(capsys.readouterr().out)
        assert entry["status"].startswith("describe failed")
    assert suite.described() == 2


def test_a_broken_entry_is_described_again_and_replaced(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.strategies(capsys)
    (entry,) = describe_cache.cache_folder().iterdir()
    entry.write_text('{"fingerprint": ')
    assert suite.strategies(capsys) == ["alpha"]
    assert suite.strategies(capsys) == ["alpha"]
    assert suite.described() == 2


def test_a_results_folder_that_cannot_be_written_costs_a_describe_only(
    suite: Suite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    not_a_folder = tmp_path / "results-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("HARNESS_RESULTS", str(not_a_folder))
    assert suite.strategies(capsys) == ["alpha"]
    assert suite.strategies(capsys) == ["alpha"]
    assert suite.described() == 2
