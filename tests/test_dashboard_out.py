"""Where `harness dashboard --out` writes: every file replaced whole (a temporary file renamed
over it), never written through a symbolic link, no link of a folder's name followed; an out
folder that cannot be written is one line and a non-zero exit, with nothing left behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import HARNESS
from historydb import readonly_argv
from historyruns import write_night

from harness import cli

pytestmark = pytest.mark.unit

VICTIM = "not the dashboard's\n"


def history(tmp_path: Path) -> str:
    """A history of three runs of two cells: pages in the site's folders too."""
    rng = np.random.default_rng(4)
    levels = {("none", 64): 1000.0, ("tokio-timeout", 64): 2000.0}
    dirs = [write_night(tmp_path / "runs", night, levels, rng) for night in range(3)]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    return url


def leftovers(folder: Path) -> list[Path]:
    return sorted(folder.rglob(".*.tmp"))


def test_links_in_the_out_folder_are_replaced_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = history(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("index.html", "style.css", "compare.js"):
        (outside / name).write_text(VICTIM)
    (outside / "series").mkdir()
    (outside / "data").mkdir()
    site = tmp_path / "site"
    site.mkdir()
    for name in ("index.html", "style.css", "compare.js", "series", "data"):
        (site / name).symlink_to(outside / name)
    (site / "machine-1.html").symlink_to(outside / "absent.html")  # dangling

    assert cli.main(["dashboard", "--db", url, "--out", str(site)]) == 0
    capsys.readouterr()
    for name in ("index.html", "style.css", "compare.js"):
        assert (outside / name).read_text() == VICTIM, name
        assert not (site / name).is_symlink() and (site / name).stat().st_size > 0, name
    assert sorted(outside.iterdir()) == sorted(
        outside / name for name in ("index.html", "style.css", "compare.js", "series", "data")
    )
    assert list((outside / "series").iterdir()) == list((outside / "data").iterdir()) == []
    for folder in ("series", "data"):
        assert not (site / folder).is_symlink() and any((site / folder).iterdir()), folder
    assert (
        not (site / "machine-1.html").is_symlink()
        and "<html" in (site / "machine-1.html").read_text()
    )
    assert leftovers(site) == []


def test_an_out_folder_under_a_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = history(tmp_path)
    (tmp_path / "file").write_text(VICTIM)
    capsys.readouterr()
    code = cli.main(["dashboard", "--db", url, "--out", str(tmp_path / "file" / "site")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith(f"harness: error: --out {tmp_path / 'file' / 'site'}: ")
    assert err.count("\n") == 1 and "Not a directory" in err, err
    assert (tmp_path / "file").read_text() == VICTIM


def test_a_page_that_cannot_replace_its_file_leaves_no_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = history(tmp_path)
    site = tmp_path / "site"
    (site / "index.html").mkdir(parents=True)  # a folder where the page goes
    capsys.readouterr()
    code = cli.main(["dashboard", "--db", url, "--out", str(site)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and "Is a directory" in err and "index.html" in err, err
    assert leftovers(site) == []


def test_a_read_only_out_folder_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = history(tmp_path)
    capsys.readouterr()
    mount = tmp_path / "readonly"
    (mount / "site").mkdir(parents=True)
    argv = [*HARNESS, "dashboard", "--db", url, "--out", str(mount / "site")]
    done = subprocess.run(
        readonly_argv([mount], argv), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"harness: error: --out {mount / 'site'}: "), done.stderr
    assert done.stderr.count("\n") == 1 and "Read-only file system" in done.stderr
    assert list((mount / "site").iterdir()) == []
