"""`harness history confirm`: the newest runs' provisional changes run again, each cell
interleaved with its baseline cell, within the nightly's share for it; an event opens only
where the change holds (the nightly runs it after the import)."""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select

from harness.catalog import choose, require_built
from harness.commands import consoles
from harness.commands.history.reading import add_db_option
from harness.commands.parsing import FORMATTER, Commands, help_text
from harness.commands.runs import deadline_slack_s, run_plan, status_exit
from harness.describe import describe
from harness.errors import BadInput
from harness.history import events
from harness.history.confirmation import Candidate, Verdict, candidates, verdicts
from harness.history.db import connect, database_errors
from harness.history.detection import confirming_needed
from harness.history.fingerprint import fingerprint
from harness.history.importer import import_run
from harness.history.schema import machines
from harness.hostinfo import collect_host
from harness.paths import lock_path, results_root, suites_path, workloads_root
from harness.run.confirming import Allotment, Ask, allot, cell_key, confirming_plan
from harness.run.estimate import clock, startup_of
from harness.run.nightly import (
    CONFIRM_MAX_REPEATS,
    CONFIRM_MIN_REPEATS,
    CONFIRM_SHARE,
    HOUR_S,
    confirm_share_s,
)
from harness.run.plan import STARTUP_ESTIMATE_S, Plan
from harness.run.preflight import preflight
from harness.rundoc.jsonfile import RunLoadError, load_run
from harness.rundoc.model import Host, RunDoc
from harness.runlock import RunLock

RANK = 2


def add_parser(verbs: Commands) -> None:
    p = verbs.add_parser(
        "confirm",
        help="run the newest runs' provisional changes again; an event opens only if it holds",
        formatter_class=FORMATTER,
        description=help_text(f"""
            A change of a series' newest run past its noise floor is provisional: the night's
            repeats alone raise the alarm or miss it. This runs each such cell again, every
            round beside the cell it is compared with (its twin, else the baseline's; same
            scenario and parameters), as the night ran it, within {CONFIRM_SHARE:.0%} of the
            nightly's hour (largest changes over their noise first); the history keeps these
            repeats apart from the series' points and
            judges the night's and them together: the change holds (its event opens) or is
            dropped. A change left out of the share keeps the night's own verdict. Runs of
            this machine only.
            """),
    )
    p.add_argument(
        "--budget-s",
        type=float,
        metavar="S",
        help=f"seconds for the confirming runs (default: {CONFIRM_SHARE * 100:.0f}%% of the "
        f"nightly's hour, {confirm_share_s():g} s, or what the hour leaves after the newest "
        "runs began if less)",
    )
    p.add_argument("--plan", action="store_true", help="print what it would run, and stop")
    add_db_option(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.budget_s is not None and not args.budget_s > 0:
        raise BadInput(f"--budget-s: expected seconds > 0, got {args.budget_s:g}")
    engine = connect(args.db, create=False)
    with database_errors(engine), engine.connect() as conn:
        digest = fingerprint(Host.model_validate(collect_host())).digest
        machine = conn.execute(select(machines.c.id).where(machines.c.fingerprint == digest))
        machine_id = machine.scalar()
        found = candidates(conn, machine_id) if machine_id is not None else []
    if machine_id is None or not found:
        print("confirm: no provisional change in this machine's newest runs: nothing to run")
        return 0
    budget_s = args.budget_s if args.budget_s is not None else _left_of_the_hour(found)
    plans, allotment = _plans(found, budget_s)
    for line in _plan_lines(plans, allotment, budget_s):
        print(line)
    if args.plan or not plans:
        return 0
    out_dir = results_root() / "runs"
    preflight(plans, out_dir)
    exit_code = 0
    with RunLock(lock_path(), " ".join(args.command_line)):
        for i, plan in enumerate(plans):
            later_s = sum(allotment.repeats * len(p.cells) * _step_s(p) for p in plans[i + 1 :])
            record, status = run_plan(
                plan, out_dir, args.command_line, deadline_slack_s(), consoles.stdout(), later_s
            )
            exit_code = max(exit_code, status_exit(record, status))
            with database_errors(engine):
                import_run(engine, record.run_dir)
            if status == "interrupted":
                break
    with database_errors(engine):
        events.refresh_pending(engine)
        with engine.connect() as conn:
            decided = verdicts(conn, machine_id, [ask.change for ask in allotment.chosen])
    for verdict in decided:
        print(_verdict_line(verdict))
    return exit_code


def _left_of_the_hour(found: list[Candidate]) -> float:
    """The share, or what the nightly's hour leaves of it after the newest runs began."""
    began = min(_when(c.started_at) for c in found)
    left = HOUR_S - (datetime.now(UTC) - began).total_seconds()
    print(
        f"confirm: the newest runs began {began:%Y-%m-%d %H:%M:%S}Z; the hour leaves "
        f"{clock(max(0.0, left))} (the share is {clock(confirm_share_s())})"
    )
    return max(0.0, min(confirm_share_s(), left))


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _plans(found: list[Candidate], budget_s: float) -> tuple[list[Plan], Allotment[Candidate]]:
    """One plan per night's run with changes that fit the share, and the allotment."""
    nights: dict[str, RunDoc | None] = {}
    asks: list[Ask[Candidate]] = []
    cpus = os.cpu_count() or 1
    for candidate in found:
        if candidate.run_dir not in nights:
            nights[candidate.run_dir] = _night(candidate)
        night = nights[candidate.run_dir]
        if night is None:
            continue
        own = cell_key(candidate.strategy, candidate.scenario, candidate.params)
        recorded = {cell_key(c.strategy, c.scenario, c.params): c for c in night.cells}
        if own not in recorded:
            print(f"confirm: {candidate.label}: no such cell in run {night.run_id}: not confirmed")
            continue
        # The cell it is compared with: its twin when the night ran it, else the baseline's.
        compared = night.baseline_of(recorded[own])
        base = cell_key(compared, candidate.scenario, candidate.params) if compared else own
        startup = startup_of(night, cpus)
        step_s = night.config.warmup_s + night.config.duration_s + (startup or STARTUP_ESTIMATE_S)
        cells = (own, base) if base != own and base in recorded else (own,)
        # A night of fewer than 5 repeats needs more confirming ones to be apart at alpha.
        needed = confirming_needed(candidate.repeats)
        least = CONFIRM_MAX_REPEATS + 1 if needed is None else max(CONFIRM_MIN_REPEATS, needed)
        asks.append(Ask(candidate, candidate.run_dir, cells, step_s, least))
    allotment = allot(asks, budget_s)
    by_run: dict[str, list[Ask[Candidate]]] = defaultdict(list)
    for ask in allotment.chosen:
        by_run[ask.change.run_dir].append(ask)
    plans = []
    for run_dir, chosen in by_run.items():
        night = nights[run_dir]
        assert night is not None
        (suite,) = [
            require_built(s) for s in choose([night.suite], workloads_root(), suites_path())
        ]
        wanted = [cell for ask in chosen for cell in ask.cells]
        try:
            plan = confirming_plan(suite, describe(suite), night, wanted, allotment.repeats)
        except BadInput as error:
            print(f"confirm: the changes of run {night.run_id} are not confirmed: {error}")
            continue
        startup = startup_of(night, cpus)
        plans.append(plan if startup is None else _with_startup(plan, startup, night.run_id))
    return plans, allotment


def _night(candidate: Candidate) -> RunDoc | None:
    try:
        return load_run(Path(candidate.run_dir) / "run.json")
    except RunLoadError as error:
        print(f"confirm: cannot confirm the changes of run {candidate.run_id}: {error}")
        return None


def _with_startup(plan: Plan, startup: float, run_id: str) -> Plan:
    return replace(plan, startup_s=startup, startup_from=run_id)


def _step_s(plan: Plan) -> float:
    return plan.warmup_s + plan.duration_s + plan.startup_s


def _plan_lines(plans: list[Plan], allotment: Allotment[Candidate], budget_s: float) -> list[str]:
    share = f"{budget_s / HOUR_S:.1%} of the nightly's hour"
    lines = [
        f"confirm plan: {_count(allotment.chosen)} past the noise floor, "
        f"{allotment.repeats} repeats a cell, about {clock(allotment.seconds)} of the "
        f"{clock(budget_s)} share ({share}):"
    ]
    if not allotment.chosen:
        lines = [f"confirm plan: no provisional change fits the {clock(budget_s)} share ({share}):"]
    for plan in plans:
        lines.append(
            f"  {plan.suite.name} (run {plan.confirms}): {len(plan.cells)} cells, each change's "
            "beside the cell it is compared with"
        )
        mine = [a for a in allotment.chosen if a.change.run_id == plan.confirms]
        for cell, asks in _by_cell(mine).items():
            lines.append(f"    {cell}: {_changes_text(asks)}")
    left: dict[str, list[Ask[Candidate]]] = defaultdict(list)
    for ask in allotment.left:
        left[ask.change.suite].append(ask)
    for suite, asks in left.items():
        lines.append(
            f"  left out (the share spent, or more than {CONFIRM_MAX_REPEATS} confirming repeats "
            f"needed): {_count(asks)} in {len(_by_cell(asks))} cells of "
            f"{suite}, the largest {asks[0].change.cell_label} {_change_text(asks[0].change)}: "
            "the night's own tests stand"
        )
    return lines


def _by_cell(asks: list[Ask[Candidate]]) -> dict[str, list[Ask[Candidate]]]:
    """The asks by their cell, largest change over its floor first."""
    out: dict[str, list[Ask[Candidate]]] = defaultdict(list)
    for ask in asks:
        out[ask.change.cell_label].append(ask)
    return out


def _count(asks: list[Ask[Candidate]]) -> str:
    return f"{len(asks)} change" + ("s" if len(asks) != 1 else "")


def _changes_text(asks: list[Ask[Candidate]]) -> str:
    """The cell's changes, the three largest over their floor named."""
    shown = "; ".join(_change_text(ask.change) for ask in asks[:3])
    more = f"; {len(asks) - 3} more" if len(asks) > 3 else ""
    return f"{_count(asks)}: {shown}{more}"


def _change_text(candidate: Candidate) -> str:
    change = candidate.change
    decided = f"p {change.p_value:.3f}" if change.p_value < 1 else "repeats not apart"
    return (
        f"{candidate.metric} {change.change:+.1%} the night (floor {change.noise:.1%}, {decided})"
    )


def _verdict_line(verdict: Verdict) -> str:
    candidate = verdict.candidate
    head = f"confirm: {candidate.label}: {candidate.change.change:+.1%} the night"
    event = f"event {verdict.event_id}" if verdict.held else "no event"
    if verdict.pooled is None:
        return (
            f"{head}, no confirming repeats (its run did not complete): the night's test: {event}"
        )
    pooled = f"{head}, {verdict.pooled:+.1%} with the confirming repeats"
    if verdict.held:
        return f"{pooled}: held, {event}"
    return f"{pooled}: dropped, no event (the change did not hold)"
