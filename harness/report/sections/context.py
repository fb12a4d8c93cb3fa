"""What the sections of report.html share: the run's figures, read once, and the page's
lines so far."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.format.metrics import ratio_metric, report_labels
from harness.report import data
from harness.report.data import Labeller


class Context:
    """One run document and its report page, as the sections build it."""

    def __init__(self, doc: Mapping[str, Any], run_dir: Path) -> None:
        self.doc = doc
        self.run_dir = run_dir
        self.cells: list[Mapping[str, Any]] = list(doc.get("cells") or [])
        self.config: Mapping[str, Any] = doc.get("config") or {}
        self.baseline: str | None = self.config.get("baseline")
        self.units = data.units(doc)
        self.labels = report_labels(doc)
        self.columns, self.unreported = data.columns(doc, self.cells)
        self.metric = ratio_metric(doc, self.columns) if self.baseline else None
        self.entries = data.comparisons(doc, self.metric)
        self.index = data.comparison_index(self.entries)
        self.name = Labeller(self.cells)
        self.anchors = {id(cell): f"cell-{i + 1}" for i, cell in enumerate(self.cells)}
        self.out: list[str] = []

    def add(self, *parts: str) -> None:
        self.out.extend(parts)

    def label(self, metric: str) -> str:
        return self.labels.get(metric, metric)

    def anchor(self, cell: Mapping[str, Any]) -> str:
        return self.anchors[id(cell)]
