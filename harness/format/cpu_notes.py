"""The closing note on CPU per op: which strategies' CPU-per-op differences from the baseline
are significant where the headline metric's (ops/s) are not.

CPU time per operation is far steadier than throughput on a small or busy machine, and it is
what the timer strategies change; this note says where it tells the strategies apart when
ops/s cannot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.format.cells import param_text
from harness.format.metrics import CPU_METRICS
from harness.format.names import printable
from harness.format.numbers import human_p, human_ratio
from harness.stats import params_key


def _cell_label(entry: Mapping[str, Any]) -> str:
    params = " ".join(
        f"{printable(k)}={param_text(v)}" for k, v in (entry.get("params") or {}).items()
    )
    names = [printable(entry.get("scenario")), printable(entry.get("candidate")), params]
    return " ".join(filter(None, names))


def cpu_notes(
    comparisons: Sequence[Mapping[str, Any]],
    headline: str | None,
    labels: Mapping[str, str],
    varying: Sequence[str] = (),
) -> list[str]:
    """One line per candidate cell whose CPU per op differs significantly from the cell it
    is compared with (the baseline's, or its twin's) while its headline metric does not;
    empty when there is none or no headline metric."""
    if not headline:
        return []
    by_cell: dict[tuple[Any, Any, str], dict[str, Mapping[str, Any]]] = {}
    for e in comparisons:
        key = (e.get("scenario"), e.get("candidate"), params_key(e.get("params")))
        by_cell.setdefault(key, {})[str(e.get("metric"))] = e
    lines = []
    for metrics in by_cell.values():
        head = metrics.get(headline)
        if head is None or head.get("significant") or head.get("ratio") is None:
            continue
        found = []
        for name in CPU_METRICS:
            cpu = metrics.get(name)
            if cpu is None or not cpu.get("significant") or cpu.get("ratio") is None:
                continue
            found.append(
                f"{labels.get(name, name)} {human_ratio(float(cpu['ratio']))} "
                f"(p={human_p(float(cpu['p_value']))}, {cpu.get('verdict')})"
            )
        if found:
            shown = {k: v for k, v in (head.get("params") or {}).items() if k in varying}
            label = _cell_label({**head, "params": shown})
            p = head.get("p_value")
            p_text = f", p={human_p(float(p))}" if p is not None else ""
            lines.append(
                f"CPU per op tells {label} from {printable(head.get('baseline'))} where "
                f"{labels.get(headline, headline)} does not "
                f"({human_ratio(float(head['ratio']))}{p_text}): " + "; ".join(found)
            )
    return lines
