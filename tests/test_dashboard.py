"""The dashboard's pages as files (no browser): what a machine page says about another
machine of the same host."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from historyruns import write_night

from harness import cli

pytestmark = pytest.mark.unit


def test_a_new_cpu_of_a_known_host_is_a_new_machine_with_what_changed(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    dirs = [
        write_night(tmp_path / "runs", night, {("none", 64): 1000.0}, rng, cpu_model=cpu)
        for night, cpu in enumerate(["EPYC 7313P", "EPYC 9354"])
    ]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert cli.main(["history", "import", "--db", url, *map(str, dirs)]) == 0
    assert cli.main(["dashboard", "--db", url, "--out", str(tmp_path / "site")]) == 0
    page = (tmp_path / "site" / "machine-2.html").read_text()
    assert "cpu_model: EPYC 7313P here EPYC 9354" in page
