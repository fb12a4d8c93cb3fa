"""Reports of a run directory: `report.html` (self-contained, offline) and `summary.md` (a
write-up to paste into a pull request), both written from run.json alone."""

from __future__ import annotations

from pathlib import Path

from harness.report.html import write_report
from harness.report.markdown import write_summary

__all__ = ["write_all", "write_report", "write_summary"]


def write_all(run_dir: Path) -> list[Path]:
    """Write report.html, then summary.md (which links to it); return both paths.

    Raises BadInput when `run_dir` has no readable run.json.
    """
    report = write_report(run_dir)
    summary = write_summary(run_dir)
    return [report, summary]
