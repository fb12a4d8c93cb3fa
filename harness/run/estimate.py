"""What a bench will take before it starts: per suite its cells, repeats and estimated
seconds (repeats x (warm-up + duration + start-up) per cell and probe variant)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.probes import overhead
from harness.run.memlimit import human
from harness.run.plan import Plan
from harness.run.progress import STARTUP_ESTIMATE_S
from harness.run.scratch import plan_files


def planned_s(plan: Plan) -> float:
    steps = (
        len(plan.cells) * plan.repeats * len(overhead.variants(plan.probes, plan.probe_overhead))
    )
    return steps * (plan.warmup_s + plan.duration_s + STARTUP_ESTIMATE_S)


def clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def plan_lines(plans: Sequence[Plan], cpus: int) -> list[str]:
    """The bench plan as printed before it starts, the total last."""
    lines = [f"bench plan ({cpus} logical CPUs):"]
    for plan in plans:
        lines.append(
            f"  {plan.suite.name}: {len(plan.cells)} cells ({len(plan.strategies)} strategies"
            f" x {len(plan.scenarios)} scenarios x parameters) x {plan.repeats} repeats of "
            f"{plan.warmup_s:g} s warm-up + {plan.duration_s:g} s: about {clock(planned_s(plan))}"
            + _scratch(plan)
        )
    total = sum(planned_s(plan) for plan in plans)
    lines.append(f"  estimated duration: {clock(total)} (start-up {STARTUP_ESTIMATE_S} s a repeat)")
    return lines


def _scratch(plan: Plan) -> str:
    files = plan_files(plan)
    if not files:
        return ""
    folders = ", ".join(dict.fromkeys(str(f.dir) for f in files))
    return f"; scratch files {human(sum(f.size_bytes for f in files))} in {folders}"
