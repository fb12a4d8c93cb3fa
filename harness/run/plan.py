"""A run's plan: the cells (strategies x swept parameters) and their repeat order, validated."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.describe import Description, ParamSpec
from harness.errors import BadInput
from harness.params import ParamValue, render
from harness.probes import overhead, registry
from harness.probes.probe import ProbeSpec
from harness.profiles.settings import ProfileSettings
from harness.run import bounds
from harness.suites import Matrix, Suite

ORDERS = ("interleaved", "sequential")
DEFAULT_PROFILE = ProfileSettings()
# What a repeat costs beyond warm-up + duration (spawning, probes, its share of the report)
# until a previous run of the suite on this machine says better (harness/run/estimate.py).
STARTUP_ESTIMATE_S = 0.5


@dataclass(frozen=True)
class Cell:
    id: str
    strategy: str
    scenario: str
    params: dict[str, ParamValue]  # set by the scenario, the matrix or --param
    explicit: dict[str, ParamValue]  # set by the matrix or --param: passed to the binary

    @property
    def label(self) -> str:
        """The strategy and its explicit parameters, for progress lines."""
        return " ".join([self.strategy, *(f"{k}={render(v)}" for k, v in self.explicit.items())])

    def run_args(self) -> list[str]:
        args = ["--strategy", self.strategy, "--scenario", self.scenario]
        for key, value in self.explicit.items():
            args += ["--param", f"{key}={render(value)}"]
        return args


@dataclass(frozen=True)
class Plan:
    suite: Suite
    description: Description
    strategies: tuple[str, ...]
    cells: tuple[Cell, ...]
    scenarios: tuple[str, ...]
    sweep: dict[str, list[ParamValue]]
    duration_s: float
    warmup_s: float
    repeats: int
    order: str
    probes: tuple[ProbeSpec, ...]
    baseline: str
    scale: dict[str, Any] | None = None
    probe_overhead: bool = False  # also run each cell without probes and with each alone
    explain_repeats: int = 0  # per cell, with every probe; 0 without an explain-only probe
    profile: ProfileSettings = DEFAULT_PROFILE
    cpuset: dict[str, list[int]] | None = None  # role -> CPUs (harness/cpuset.py)
    cpuset_auto: bool = False  # harness bench's split: pins only a workload with a server
    startup_s: float = STARTUP_ESTIMATE_S  # a repeat's seconds beyond warm-up + duration
    startup_from: str | None = None  # the run whose length gave startup_s, if one did
    confirms: str | None = None  # the run whose provisional changes it confirms

    def schedule(self) -> Iterator[tuple[int, int]]:
        """(cell index, repeat index) pairs in run order, made as they are taken.

        Interleaved runs every cell once per round, so slow drift of the machine (thermal,
        background load) spreads over all cells instead of biasing the last ones.
        """
        cells, rounds = range(len(self.cells)), range(self.repeats)
        if self.order == "interleaved":
            return ((c, r) for r in rounds for c in cells)
        return ((c, r) for c in cells for r in rounds)

    def variants(self) -> list[overhead.Variant]:
        """The probe sets of a round, the measurement set last (probes/overhead.py)."""
        return overhead.variants(self.probes, self.probe_overhead, self.explain_repeats > 0)

    def runs(self) -> Iterator[tuple[int, int, overhead.Variant]]:
        """(cell index, round index, probe set) of every repeat, in run order: each round of a
        cell runs its probe sets one after the other, the explain set in its rounds only."""
        sets = self.variants()
        explain_rounds = overhead.explain_rounds(self.repeats, self.explain_repeats)
        return (
            (c, r, v)
            for c, r in self.schedule()
            for v in sets
            if not v.explain or r in explain_rounds
        )

    def steps_per_cell(self) -> int:
        """Repeats a cell runs, every probe set's."""
        sets = self.variants()
        every_round = sum(not v.explain for v in sets)
        return self.repeats * every_round + self.explain_repeats * sum(v.explain for v in sets)

    def twins(self) -> dict[str, str]:
        """The twins describe names for the run's strategies (strategy -> its twin), whether
        or not the twin is in the run."""
        return {s: t for s, t in self.description.twins.items() if s in self.strategies}

    def compared_with(self, strategy: str) -> str | None:
        """The strategy a cell of `strategy` is compared with: its twin when the run has it,
        else the baseline; None for the baseline without a twin in the run."""
        twin = self.description.twins.get(strategy)
        if twin is not None and twin in self.strategies:
            return twin
        return None if strategy == self.baseline else self.baseline

    def metrics(self) -> list[Mapping[str, Any]]:
        """The metrics run.json declares: the workload's, then the probes' when there are any."""
        return [*self.description.metrics, *(registry.declared_metrics() if self.probes else ())]

    def config(self) -> dict[str, Any]:
        """The run.json `config` object."""
        return {
            "binary": str(self.suite.binary),
            "strategies": list(self.strategies),
            "scenario": self.scenarios[0] if len(self.scenarios) == 1 else list(self.scenarios),
            "params": self.sweep,
            "duration_s": self.duration_s,
            "warmup_s": self.warmup_s,
            "repeats": self.repeats,
            "order": self.order,
            "probes": [spec.name for spec in self.probes],
            "probes_named": [spec.name for spec in self.probes if spec.named],
            "probe_overhead": self.probe_overhead,
            "probes_unavailable": registry.unavailable_here(spec.name for spec in self.probes),
            **self._sets(),
            "baseline": self.baseline,
            **({"compare_with": twins} if (twins := self.twins()) else {}),
            "scale": self.scale,
            **self.profile.config(),
            **({"cpuset": self.cpuset, "cpuset_auto": self.cpuset_auto} if self.cpuset else {}),
            **({"confirms": self.confirms} if self.confirms else {}),
        }

    def _sets(self) -> dict[str, Any]:
        """Which probes the measurement repeats carry, and the explain repeats' key."""
        sets = self.variants()
        keys: dict[str, Any] = {
            "measurement_probes": [spec.name for spec in sets[-1].specs],
            "measurement_set": sets[-1].key,
            "explain_repeats": self.explain_repeats,
        }
        explain = [v.key for v in sets if v.explain]
        return keys | ({"explain_set": explain[0]} if explain else {})


def explain_count(
    probes: tuple[ProbeSpec, ...], asked: int | None, repeats: int, probe_overhead: bool
) -> tuple[tuple[ProbeSpec, ...], int]:
    """The probes and the explain repeats per cell of a run: `asked` (None: 1) when some probe
    needs them (explain-only, or lean on the measurement repeats), every round with
    --probe-overhead; at 0 none, and no explain-only probe (a lean one runs lean only)."""
    explained = [spec for spec in probes if registry.kind_of(spec.name).needs_explain]
    if not explained:
        return probes, 0
    if probe_overhead:
        return probes, repeats
    count = 1 if asked is None else asked
    if count > repeats:
        raise BadInput(
            f"{count} explain repeats a cell, more than its {repeats} repeats (each explain "
            "repeat runs in a round of its own, beside that round's measurement repeat)"
        )
    if count == 0:
        only = [spec for spec in explained if registry.kind_of(spec.name).explain]
        named = [spec.name for spec in only if spec.named]
        if named:
            raise BadInput(
                f"0 explain repeats, and {', '.join(named)} only run on explain repeats: ask "
                "for at least one (--explain-repeats N) or leave them out of --probes"
            )
        return tuple(spec for spec in probes if spec not in only), 0
    return probes, count


def build_plan(
    suite: Suite,
    description: Description,
    *,
    strategies: Sequence[str] | None,
    scenarios: Sequence[str] | None,
    sweep: Mapping[str, Sequence[object]],
    duration_s: float,
    warmup_s: float,
    repeats: int,
    order: str,
    probes: tuple[ProbeSpec, ...],
    scale: dict[str, Any] | None = None,
    probe_overhead: bool = False,
    explain_repeats: int | None = None,
    baseline: str | None = None,
    profile: ProfileSettings | None = None,
    cpuset: dict[str, list[int]] | None = None,
) -> Plan:
    """Check every requested name and value against describe and lay out the cells."""
    valid = description.strategy_names
    chosen = list(dict.fromkeys(strategies)) if strategies else valid
    for name in chosen:
        if name not in valid:
            raise BadInput(
                f"unknown strategy '{name}' for suite '{suite.name}' (valid: {', '.join(valid)})"
            )
    chosen_scenarios = list(dict.fromkeys(scenarios or [description.default_scenario]))
    scenario_params = {name: description.scenario(name).params for name in chosen_scenarios}
    axes: dict[str, list[ParamValue]] = {}
    for key, values in sweep.items():
        axes[key] = list(dict.fromkeys(description.coerce(key, v) for v in values))
    if baseline is not None and baseline not in valid:
        raise BadInput(
            f"--baseline: unknown strategy '{baseline}' for suite '{suite.name}' "
            f"(valid: {', '.join(valid)})"
        )
    baseline = baseline or _baseline(suite, description)
    probes, explained = explain_count(probes, explain_repeats, repeats, probe_overhead)
    bounds.check_cells(
        len(chosen_scenarios) * len(chosen) * math.prod(len(v) for v in axes.values())
    )
    cells = []
    # Several scenarios: the id starts with the scenario (`contended/smart-lifo`).
    prefix = len(chosen_scenarios) > 1
    for scenario_name in chosen_scenarios:
        for strategy in chosen:
            for combo in itertools.product(*axes.values()):
                explicit = dict(zip(axes, combo, strict=True))
                parts = [strategy, *(f"{k}={render(v)}" for k, v in explicit.items())]
                cells.append(
                    Cell(
                        id="/".join([scenario_name, *parts] if prefix else parts),
                        strategy=strategy,
                        scenario=scenario_name,
                        params={**scenario_params[scenario_name], **explicit},
                        explicit=explicit,
                    )
                )
    return Plan(
        suite=suite,
        description=description,
        strategies=tuple(chosen),
        cells=tuple(cells),
        scenarios=tuple(chosen_scenarios),
        sweep=axes,
        duration_s=duration_s,
        warmup_s=warmup_s,
        repeats=repeats,
        order=order,
        probes=probes,
        baseline=baseline,
        scale=scale,
        probe_overhead=probe_overhead,
        explain_repeats=explained,
        profile=profile or ProfileSettings(),
        cpuset=cpuset or None,
    )


def _baseline(suite: Suite, description: Description) -> str:
    valid = description.strategy_names
    if suite.baseline is not None:
        if suite.baseline not in valid:
            raise BadInput(
                f"{suite.manifest}: key 'baseline': unknown strategy '{suite.baseline}' "
                f"(valid: {', '.join(valid)})"
            )
        return suite.baseline
    if description.baseline in valid:
        return description.baseline
    return valid[0]


def plan_matrix(
    suite: Suite,
    description: Description,
    matrix: Matrix,
    logical_cpus: int,
    probes: tuple[ProbeSpec, ...] = (),
) -> Plan:
    """The plan of a suite's [bench] (or [quick]) matrix, scaled to this machine."""
    sweep: dict[str, Sequence[object]] = dict(matrix.params)
    scale_note = None
    if matrix.scale is not None:
        scale = matrix.scale
        for name in scale.params:
            spec = description.param(name)
            if spec.type != "int":
                raise BadInput(
                    f"{suite.manifest}: key '{scale.key}.params': '{name}' is a {spec.type} "
                    "parameter; only int parameters scale"
                )
            scaled = []
            for value in sweep[name]:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise BadInput(
                        f"{suite.manifest}: key 'bench.params.{name}': {value!r} is not an integer"
                    )
                # Values are at the reference machine's scale: range-check them once scaled.
                scaled.append(_clamp(scale.apply(value, logical_cpus), spec))
            sweep[name] = scaled
        scale_note = {
            "logical_cpus": logical_cpus,
            "reference_threads": scale.reference_threads,
            "minimum": scale.minimum,
            "params": list(scale.params),
        }
    return build_plan(
        suite,
        description,
        strategies=matrix.strategies,
        scenarios=matrix.scenarios,
        sweep=sweep,
        duration_s=matrix.duration_s,
        warmup_s=matrix.warmup_s,
        repeats=matrix.repeats,
        order="interleaved",
        probes=probes,
        scale=scale_note,
        explain_repeats=matrix.explain_repeats,
    )


def _clamp(value: int, spec: ParamSpec) -> int:
    if spec.min is not None:
        value = max(value, math.ceil(spec.min))
    if spec.max is not None:
        value = min(value, math.floor(spec.max))
    return value
