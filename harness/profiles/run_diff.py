"""Differential flame graphs between two runs: each cell of B that has an on-CPU profile
against the matching cell of A (before -> after a change), written under
`<B>/compare/<A's run id>/`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.profiles import folded, inferno
from harness.profiles.cells import slug

CellKey = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


def diff_runs(
    a: Mapping[str, Any], a_dir: Path, b: Mapping[str, Any], b_dir: Path, key: CellKey
) -> tuple[list[Path], list[str]]:
    """(graphs written, why a matched cell has none)."""
    cells_a = {key(a, cell): cell for cell in a.get("cells") or []}
    out_dir = b_dir / "compare" / slug(str(a.get("run_id")))
    written: list[Path] = []
    missing: list[str] = []
    for cell_b in b.get("cells") or []:
        cell_a = cells_a.get(key(b, cell_b))
        if cell_a is None:
            continue
        paths = [(cell.get("profile") or {}).get("folded") for cell in (cell_a, cell_b)]
        if not all(paths):
            missing.append(f"{cell_b.get('id')}: no on-CPU profile in {'AB'[paths.index(None)]}")
            continue
        problem = inferno.problem()
        if problem:
            return written, [f"no differential graphs: {problem}"]
        try:
            before = folded.read(a_dir / str(paths[0]))
            after = folded.read(b_dir / str(paths[1]))
            diff = inferno.diff_folded(folded.render(before), folded.render(after), out_dir)
            svg = out_dir / f"{slug(str(cell_b.get('id')))}.diff.svg"
            inferno.flamegraph(
                diff,
                svg,
                title=f"{b.get('suite')}: {cell_b.get('strategy')}, run B vs run A, on-CPU",
                subtitle=f"A {a.get('run_id')} -> B {b.get('run_id')}; red: more in B, "
                "blue: less (normalised by sample count)",
            )
        except (OSError, inferno.InfernoError) as err:
            missing.append(f"{cell_b.get('id')}: {err}")
            continue
        written.append(svg)
    return written, missing
