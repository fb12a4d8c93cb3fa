"""What a flame graph of a cell is, as a probe kind declares it (its GRAPHS): drawn from the
kind's stacks by profiles/cells.py, listed in the reports' order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FlameGraph:
    """A flame graph a kind's stacks give each cell: its keys in run.json's `profile` and its
    place in the reports."""

    probe: str  # the kind's name
    key: str
    title: str  # "on-CPU": "<title> flame graph" in the reports
    svg_key: str
    folded_key: str | None
    # Words of a profile note's head (before its first colon) that name this graph.
    keywords: tuple[str, ...]
    rank: int  # its place among every kind's graphs in the reports
    # Notes are matched against the graphs in this order: "no differential graph: the baseline
    # cell has no on-CPU profile" is about the differential graph, though it names on-CPU.
    note_rank: int
    differential: bool = False  # against the baseline cell's stacks
    # Listed for every cell, with why it is missing; False: only where the kind's probe ran.
    always: bool = True
    # The head of the cell's profile note when it has none of these stacks ("no off-CPU
    # graph: futex unavailable: ..."); a differential graph's notes are profiles/cells.py's.
    missing: str = ""
