"""The confirming runs of a night's provisional changes: which changes fit the share of the
hour and with how many repeats (`allot`), and each suite's plan (`confirming_plan`): the
changes' cells and their baseline cells, interleaved (every round runs each cell once, a
cell beside its baseline cell), as the night ran them (its window, warm-up, measurement
probes, cpuset and profile settings), with no explain repeats."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from harness.describe import Description
from harness.errors import BadInput
from harness.probes.spec import parse_probes
from harness.profiles.settings import ProfileSettings
from harness.run.nightly import CONFIRM_MAX_REPEATS, CONFIRM_MIN_REPEATS
from harness.run.plan import Plan, build_plan
from harness.rundoc.model import RunDoc
from harness.stats import params_key
from harness.suites import Suite

T = TypeVar("T")

CellKey = tuple[str, str, str]  # strategy, scenario, params_key(params)


def cell_key(strategy: str, scenario: str, params: dict[str, Any]) -> CellKey:
    return (strategy, scenario, params_key(params))


@dataclass(frozen=True)
class Ask(Generic[T]):
    """A change to confirm: its cells (its own and its baseline cell) in its run, and the
    seconds a repeat of that run takes."""

    change: T
    run: Hashable
    cells: tuple[CellKey, ...]
    step_s: float
    min_repeats: int = CONFIRM_MIN_REPEATS
    """The fewest repeats that can decide it (more when its night had fewer than 5)."""


@dataclass(frozen=True)
class Allotment(Generic[T]):
    chosen: list[Ask[T]]
    left: list[Ask[T]]
    repeats: int
    seconds: float


def allot(asks: Sequence[Ask[T]], budget_s: float) -> Allotment[T]:
    """The asks, in their order, that fit `budget_s` at the most of their min_repeats a cell
    (a cell shared by two changes runs once), and the repeats every chosen cell then gets:
    as many as fit, at most CONFIRM_MAX_REPEATS (an ask that needs more is left out)."""
    cells: dict[tuple[Hashable, CellKey], float] = {}
    chosen: list[Ask[T]] = []
    left: list[Ask[T]] = []
    least = CONFIRM_MIN_REPEATS
    for ask in asks:
        more = {(ask.run, cell): ask.step_s for cell in ask.cells}
        need = max(least, ask.min_repeats)
        if need <= CONFIRM_MAX_REPEATS and need * sum((cells | more).values()) <= budget_s:
            cells |= more
            chosen.append(ask)
            least = need
        else:
            left.append(ask)
    round_s = sum(cells.values())
    fit = min(CONFIRM_MAX_REPEATS, math.floor(budget_s / round_s)) if round_s else 0
    repeats = max(least, fit) if chosen else 0
    return Allotment(chosen, left, repeats, repeats * round_s)


def confirming_plan(
    suite: Suite,
    description: Description,
    night: RunDoc,
    cells: Sequence[CellKey],
    repeats: int,
) -> Plan:
    """The plan that runs `cells` of the night's run again, in their order within a round;
    BadInput when one is no longer a cell of the suite (a strategy or value it lost)."""
    config = night.config
    recorded = {cell_key(c.strategy, c.scenario, c.params): c for c in night.cells}
    wanted = [recorded[key] for key in dict.fromkeys(cells) if key in recorded]
    if len(wanted) < len(set(cells)):
        raise BadInput(f"run {night.run_id}: a cell to confirm is not in its run.json")
    sweep = {name: list(dict.fromkeys(c.params[name] for c in wanted)) for name in config.params}
    probes = config.measurement_probes if config.measurement_probes is not None else config.probes
    plan = build_plan(
        suite,
        description,
        strategies=list(dict.fromkeys(c.strategy for c in wanted)),
        scenarios=list(dict.fromkeys(c.scenario for c in wanted)),
        sweep=sweep,
        duration_s=config.duration_s,
        warmup_s=config.warmup_s,
        repeats=repeats,
        order="interleaved",
        probes=parse_probes(",".join(probes) or "none"),
        scale=config.scale.model_dump() if config.scale is not None else None,
        explain_repeats=0,
        baseline=config.baseline,
        profile=ProfileSettings(
            frequency_hz=config.perf_frequency_hz,
            callgraph=config.callgraph,
            mutex_patterns=tuple(config.mutex_patterns),
            kernel_stacks=bool(config.offwake_kernel_stacks),
        ),
        cpuset=config.cpuset,
    )
    built = {cell_key(c.strategy, c.scenario, c.params): c for c in plan.cells}
    missing = [key for key in dict.fromkeys(cells) if key not in built]
    if missing:
        strategy, scenario, params = missing[0]
        raise BadInput(
            f"suite '{suite.name}': the cell {strategy} {scenario} {params} of run "
            f"{night.run_id} is not one the suite makes now"
        )
    return replace(
        plan,
        cells=tuple(built[key] for key in dict.fromkeys(cells)),
        cpuset_auto=bool(config.cpuset_auto),
        confirms=night.run_id,
    )
