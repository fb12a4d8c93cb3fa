"""Reports of a run directory: `report.html` (self-contained, offline) and `summary.md` (a
write-up to paste into a pull request), both written from run.json alone; the charts they
open with are drawn once, before either (harness/charts/)."""

from __future__ import annotations

from pathlib import Path

from harness.report.html import write_report
from harness.report.markdown import write_summary
from harness.rundoc.jsonfile import as_json, load_run

__all__ = ["write_all", "write_report", "write_summary"]


def write_all(run_dir: Path) -> list[Path]:
    """Draw the charts both open with (harness/charts/run.py), write report.html, then
    summary.md (which links to it); return both paths.

    Raises BadInput when `run_dir` has no readable run.json.
    """
    from harness.charts.run import write_charts  # matplotlib: only when drawing

    run = load_run(run_dir)
    write_charts(as_json(run), run_dir)  # harness/charts/ reads run.json's dicts
    return [write_report(run_dir, run), write_summary(run_dir, run)]
