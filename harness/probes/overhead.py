"""The probe sets of a cell's rounds, and --probe-overhead's ratios.

Every round runs the measurement set, the probes cheap enough for the figures (docs/probes.md);
the cell's explain rounds also run the explain set, every probe. --probe-overhead adds, every
round, a run without probes and one with each probe alone, and runs the explain set every round.

The cost of a probe is the ratio of ops/s medians, with the probe / without (1.0 = free,
0.9 = 10% fewer ops/s). Per cell, and over the run as the geometric mean of the cells'
ratios (the mean that treats 0.5x and 2x symmetrically).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from harness.probes.probe import ProbeSpec

NONE = "none"
ALL = "all"
# The explain set's key when it has the measurement set's probes (sched counters-only on one, in
# full on the other).
EXPLAIN = "explain"
METRIC = "ops_per_sec"


class Variant(NamedTuple):
    """A probe set the rounds of a cell run with."""

    key: str  # `none`, a probe's name, `all` (every probe of the run), else names joined by +
    specs: tuple[ProbeSpec, ...]
    explain: bool = False  # the explain set: only in the cell's explain rounds


def measurement_specs(specs: tuple[ProbeSpec, ...]) -> tuple[ProbeSpec, ...]:
    """The probes of the measurement repeats: those whose kind is not explain-only."""
    from harness.probes import registry  # here: the kinds' drivers import run.json's record

    return tuple(spec for spec in specs if not registry.kind_of(spec.name).explain)


def set_key(subset: tuple[ProbeSpec, ...], specs: tuple[ProbeSpec, ...]) -> str:
    """The key of a subset of the run's probes in run.json's probe_variants and ratios."""
    if not subset:
        return NONE
    if len(subset) == 1:
        return subset[0].name
    return ALL if subset == specs else "+".join(spec.name for spec in subset)


def variants(specs: tuple[ProbeSpec, ...], overhead: bool, explain: bool) -> list[Variant]:
    """The probe sets of each round of a cell: the measurement set last (its repeats are the
    cell's `repeats`), the explain set (every probe; explain: the run has explain repeats)
    before it; with --probe-overhead first `none` and each probe alone, unless a main set is
    it. Every set but the explain one runs a kind's measurement_args."""
    measured = measurement_specs(specs)
    main = Variant(set_key(measured, specs), measured)
    explained: list[Variant] = []
    if explain:
        key = set_key(specs, specs)
        explained = [Variant(EXPLAIN if key == main.key else key, specs, True)]
    extra: list[Variant] = []
    if overhead and specs:
        alone = [Variant(spec.name, (spec,)) for spec in specs] if len(specs) > 1 else []
        extra = [Variant(NONE, ()), *alone]
    taken = {main.key, *(v.key for v in explained)}
    return [*(v for v in extra if v.key not in taken), *explained, main]


def explain_rounds(repeats: int, explain_repeats: int) -> frozenset[int]:
    """The rounds (0-based) that run the explain set: spread evenly over the cell's rounds,
    away from the first and last, where a drift would weigh most."""
    count = min(explain_repeats, repeats)
    return frozenset((2 * i + 1) * repeats // (2 * count) for i in range(count))


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
