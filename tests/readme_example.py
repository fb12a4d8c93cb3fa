"""The example suite of docs/adding-a-suite.md, written out as that page
shows it: each file is the fenced block after a `<!-- file: PATH -->` line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness.paths import REPO_ROOT

_FILE = re.compile(r"^<!-- file: (?P<path>[\w./-]+) -->\n```\w*\n(?P<body>.*?)^```$", re.M | re.S)


def example_files() -> dict[str, str]:
    """Path (relative to a folder of suites) -> text, in the page's order."""
    page = (REPO_ROOT / "docs" / "adding-a-suite.md").read_text()
    files = {m["path"]: m["body"] for m in _FILE.finditer(page)}
    assert files, "docs/adding-a-suite.md has no <!-- file: PATH --> blocks"
    return files


def example_name() -> str:
    """The example suite's name, from its suite.toml."""
    (text,) = (body for path, body in example_files().items() if path.endswith("/suite.toml"))
    name: str = tomllib.loads(text)["name"]
    return name


def write_example(suites_folder: Path) -> Path:
    """Write the example under `suites_folder` (a folder of suites), its scripts executable as
    the page's `chmod +x` makes them; returns the suite's folder."""
    for relative, body in example_files().items():
        path = suites_folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        if body.startswith("#!"):
            path.chmod(0o755)
    return suites_folder / example_name()
