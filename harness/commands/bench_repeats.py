"""`harness bench`'s repeats by noise: each suite's figures from the history on this machine,
the repeats they get within the bench's share of the nightly's hour (run/noise_repeats.py),
and the lines the plan prints: what each suite got and why, and the confirming runs' share."""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError
from harness.history.db import connect, database_errors
from harness.history.fingerprint import fingerprint
from harness.history.suite_noise import suite_figures
from harness.hostinfo import collect_host
from harness.run.estimate import clock, planned_s
from harness.run.nightly import CONFIRM_SHARE, HOUR_S, bench_share_s, confirm_share_s
from harness.run.noise_repeats import Figure, allot_repeats, allotment_lines
from harness.run.plan import Plan
from harness.rundoc.model import Host


def by_noise(plans: Sequence[Plan]) -> tuple[list[Plan], list[str]]:
    """The plans with their repeats by noise, and the lines that say what each got and why."""
    figures, note = _figures(plans)
    budget = bench_share_s()
    allotted_plans, allotted, over = allot_repeats(plans, figures, budget)
    return allotted_plans, [*([note] if note else []), *allotment_lines(allotted, over, budget)]


def confirm_line(plans: Sequence[Plan]) -> str:
    """The confirming runs' share of the hour, and what this plan leaves them."""
    share = confirm_share_s()
    left = HOUR_S - sum(planned_s(plan) for plan in plans)
    line = (
        f"  then confirming runs (harness history confirm): up to {clock(share)}, "
        f"{CONFIRM_SHARE:.0%} of the hour"
    )
    if left < share:
        line += f"; this plan leaves {clock(max(0.0, left))}"
    return line


def _figures(plans: Sequence[Plan]) -> tuple[dict[str, Figure], str | None]:
    """suite -> its figure on this machine; a line when the history could not be read."""
    headline = {
        plan.suite.name: str(plan.description.metrics[0]["name"])
        for plan in plans
        if plan.description.metrics
    }
    host = Host.model_validate(collect_host())
    machine = host.hostname or fingerprint(host).digest[:12]
    try:
        engine = connect(None, create=False)
    except HarnessError:  # no history yet (or none there): every suite keeps its repeats
        return {}, None
    try:
        with database_errors(engine), engine.connect() as conn:
            return suite_figures(conn, machine, headline), None
    except HarnessError as error:
        return {}, f"  repeats by noise: {error}; every suite keeps its [bench] repeats"
