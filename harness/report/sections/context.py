"""What the sections of report.html share: the run's facts (report/data.py, built as for
summary.md) and the page's lines so far."""

from __future__ import annotations

from pathlib import Path

from harness.report.data import Facts
from harness.rundoc.model import Cell, RunDoc


class Context(Facts):
    """One run and its report page, as the sections build it."""

    run_dir: Path

    def __init__(self, run: RunDoc, run_dir: Path) -> None:
        super().__init__(run, run_dir)
        if not self.baseline:
            self.metric = None  # no ratio column without a baseline
        self.anchors = {id(cell): f"cell-{i + 1}" for i, cell in enumerate(self.cells)}
        self.out: list[str] = []

    def add(self, *parts: str) -> None:
        self.out.extend(parts)

    def anchor(self, cell: Cell) -> str:
        return self.anchors[id(cell)]
