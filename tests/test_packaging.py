"""pyproject.toml installs every package of harness/: an install that is not editable (a wheel)
missed harness.base, harness.charts and harness.report.sections."""

from __future__ import annotations

import tomllib

import pytest

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.unit


def test_every_package_of_the_harness_is_installed() -> None:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for init in (REPO_ROOT / "harness").rglob("__init__.py")
    }
    assert listed == on_disk
