"""A typed run and its JSON form side by side, for the readers of run.json (report/, tables,
compare): they read the typed fields; the JSON form serves the shared helpers that take
run.json's dicts (harness/format/, harness/stats, the probes' figures, harness/charts/)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.rundoc.jsonfile import as_json
from harness.rundoc.model import Cell, RunDoc


class RunView:
    """One run, dumped once: `doc` is run.json's document, `cell_doc(cell)` a cell's."""

    def __init__(self, run: RunDoc) -> None:
        self.run = run
        self.doc = as_json(run)
        self.cells = run.cells
        self.cell_docs: list[Mapping[str, Any]] = self.doc["cells"]
        self._docs: dict[int, Mapping[str, Any]] = {
            id(cell): doc for cell, doc in zip(self.cells, self.cell_docs, strict=True)
        }

    def cell_doc(self, cell: Cell) -> Mapping[str, Any]:
        return self._docs[id(cell)]
