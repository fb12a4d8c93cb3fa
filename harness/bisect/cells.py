"""The cells two builds are measured on, and the metric that judges them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.describe import Description
from harness.errors import BadInput
from harness.run.plan import Cell, build_plan
from harness.suites import Suite


@dataclass(frozen=True)
class Choice:
    """What the user asked for: strategies, scenarios, --param pairs, the metric."""

    strategies: tuple[str, ...]
    scenarios: tuple[str, ...]
    sweep: Mapping[str, Sequence[str]]
    metric: str | None


def one_cell_check(choice: Choice) -> None:
    """A bisection measures one cell: bad input, before anything is built, otherwise."""
    if len(choice.strategies) > 1:
        raise BadInput(
            f"--strategies names {len(choice.strategies)} strategies "
            f"({', '.join(choice.strategies)}): a bisection measures one cell, name one"
        )
    if len(choice.scenarios) > 1:
        raise BadInput("--scenario names several scenarios: a bisection measures one cell")
    for key, values in choice.sweep.items():
        if len(values) > 1:
            raise BadInput(
                f"--param {key} has {len(values)} values: a bisection measures one cell, "
                "give each parameter one value"
            )


def cells(
    suite: Suite, description: Description, choice: Choice, *, default_one: bool
) -> list[Cell]:
    """The cells of the choice on the reference build (default_one: the baseline strategy
    when none is named, else the suite's [bench] ones)."""
    strategies: Sequence[str] | None = choice.strategies or None
    if strategies is None:
        if default_one:
            strategies = [suite.baseline or description.baseline or description.strategy_names[0]]
        else:
            strategies = suite.bench.strategies
    plan = build_plan(
        suite,
        description,
        strategies=strategies,
        scenarios=choice.scenarios or (None if default_one else suite.bench.scenarios),
        sweep=choice.sweep,
        duration_s=1.0,
        warmup_s=0.0,
        repeats=1,
        order="interleaved",
        probes=(),
    )
    return list(plan.cells)


def check_other(description: Description, chosen: Sequence[Cell], which: str) -> None:
    """The other build knows the cells' strategies and scenarios too."""
    for cell in chosen:
        if cell.strategy not in description.strategy_names:
            raise BadInput(f"the {which} build has no strategy '{cell.strategy}'")
        description.scenario(cell.scenario)


def metric(description: Description, asked: str | None) -> tuple[str, str]:
    """(metric, better): the asked one, else the first headline metric of the describe, else
    ops_per_sec, else the first declared; better is `higher` unless it says `lower`."""
    declared = {str(m["name"]): m for m in description.metrics}
    if asked is not None:
        if asked not in declared:
            valid = ", ".join(declared) or "none"
            raise BadInput(
                f"--metric {asked!r}: the suite declares no such metric (valid: {valid})"
            )
        name = asked
    else:
        headline = [n for n, m in declared.items() if m.get("headline")]
        if headline:
            name = headline[0]
        elif "ops_per_sec" in declared:
            name = "ops_per_sec"
        elif declared:
            name = next(iter(declared))
        else:
            raise BadInput("the suite declares no metric to compare: name one with --metric")
    better = str(declared.get(name, {}).get("better") or "higher")
    return name, "lower" if better == "lower" else "higher"
