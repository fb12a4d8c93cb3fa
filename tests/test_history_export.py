"""`history export --format csv` in a spreadsheet: a text cell that starts like a formula is
quoted with a leading ' (OWASP's CSV injection advice); numbers, negative ones too, stay
numbers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from historyruns import harness, write_night

pytestmark = pytest.mark.unit

STRATEGIES = ('=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", "\tx", "\rx", "plain")


def test_csv_export_quotes_formula_text_and_keeps_negative_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    levels = {(strategy, 64): -1000.0 for strategy in STRATEGIES}
    run = write_night(tmp_path / "runs", 0, levels, np.random.default_rng(3), hostname="-host")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    code, _, err = harness(["history", "import", "--db", url, str(run)], capsys)
    assert code == 0, err
    code, out, err = harness(["history", "export", "--format", "csv", "--db", url], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    quoted = {"'" + strategy for strategy in STRATEGIES if strategy != "plain"}
    assert {row["strategy"] for row in rows} == quoted | {"plain"}
    for row in rows:
        assert row["machine"] == "'-host"
        assert float(row["median"]) == pytest.approx(-1000.0, rel=0.05)
        assert row["median"].startswith("-")
    # JSON lines are data, not a spreadsheet: as they are.
    _, out, _ = harness(["history", "export", "--format", "jsonl", "--db", url], capsys)
    assert '"strategy": "=HYPERLINK' in out
