"""A cell's stacks: every repeat's output of every probe kind, read from the run directory and
given to its kind's `stacks` (the profiles draw them, profiles/cells.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.probes import registry
from harness.profiles.stacks import Stacks
from harness.rundoc.model import Cell


def _raw_outputs(run_dir: Path, cell: Cell, probe: str) -> list[tuple[Path, Any]]:
    summary = cell.probes.get(probe)
    out = []
    for entry in summary.repeats if summary else []:
        if entry.path is not None:
            path = run_dir / entry.path
            try:
                out.append((path, json.loads(path.read_text())))
            except (OSError, ValueError):
                continue
    return out


def gather(run_dir: Path, cell: Cell) -> Stacks:
    """Every repeat's output of every probe kind, into the cell's stacks."""
    stacks = Stacks()
    for kind in registry.NAMED:
        for path, data in _raw_outputs(run_dir, cell, kind.name):
            kind.stacks(path, data, stacks)
    return stacks
