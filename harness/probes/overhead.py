"""--probe-overhead: each cell also runs without probes and with each probe alone.

The cost of a probe is the ratio of ops/s medians, with the probe / without (1.0 = free,
0.9 = 10% fewer ops/s). Per cell, and over the run as the geometric mean of the cells'
ratios (the mean that treats 0.5x and 2x symmetrically).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.probes.probe import ProbeSpec

NONE = "none"
ALL = "all"
METRIC = "ops_per_sec"

Variant = tuple[str, tuple[ProbeSpec, ...]]


def variant_count(probes: int, overhead: bool) -> int:
    """How many variants `variants` gives for that many probes."""
    if not overhead or not probes:
        return 1
    return 2 + probes if probes > 1 else 2


def variants(specs: tuple[ProbeSpec, ...], overhead: bool) -> list[Variant]:
    """The probe sets each repeat of a cell runs with, the main one (all probes) last.

    The main variant's repeats are the cell's repeats; the others only feed the ratios.
    """
    main_key = ALL if len(specs) > 1 else specs[0].name if specs else NONE
    main: Variant = (main_key, specs)
    if not overhead or not specs:
        return [main]
    alone: list[Variant] = [(spec.name, (spec,)) for spec in specs] if len(specs) > 1 else []
    return [(NONE, ()), *alone, main]


def _median_ops(results: Sequence[Mapping[str, Any]]) -> float | None:
    values = [r[METRIC] for r in results if isinstance(r.get(METRIC), int | float)]
    return statistics.median(values) if values else None


def cell_overhead(
    variant_results: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, float | None]:
    """{probe set: median ops/s with it / median without}; None when a side has no repeat."""
    without = _median_ops(variant_results.get(NONE) or [])
    ratios: dict[str, float | None] = {}
    for key, results in variant_results.items():
        if key == NONE:
            continue
        with_probe = _median_ops(results)
        ratios[key] = with_probe / without if with_probe is not None and without else None
    return ratios


def run_overhead(cell_ratios: Iterable[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Geometric mean over the cells of each probe set's ratio."""
    per_key: dict[str, list[float]] = {}
    for ratios in cell_ratios:
        for key, ratio in ratios.items():
            values = per_key.setdefault(key, [])
            if ratio is not None and ratio > 0:
                values.append(ratio)
    return {
        key: math.exp(statistics.fmean(math.log(v) for v in values)) if values else None
        for key, values in per_key.items()
    }
