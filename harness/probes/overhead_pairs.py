"""--probe-overhead ratios with their intervals, paired by repeat round.

The rounds are interleaved (every probe set of a cell runs once per round, one after the
other), so the machine's slow drift (a slow round, another job) hits a round's runs alike:
the ratio of each round, ops/s with the probes / ops/s without in that same round, cancels
it, where the ratio of two medians of noisy repeats does not. Per probe set:

- `ratio`: the median of the rounds' ratios; `ci95_low`/`ci95_high`: the interval of that
  median from order statistics (harness/stats.median_interval, as every median of the
  table: [min, max] below 6 rounds, with its coverage in `ci_coverage`);
- `p_value`: Wilcoxon signed-rank, two-sided, exact, of the log ratios against 0 (paired,
  distribution-free); `significant`: p < 0.05. A paired exact test needs 6 rounds to go
  below 0.05 (n rounds: p >= 2 / 2^n), which `reason` says when there are fewer.

Over the run the rounds' ratios of every cell are pooled (the same figures).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text

from harness.format.numbers import DASH, human_p, human_ratio, percent
from harness.probes import bpfstats
from harness.probes.overhead import ALL, METRIC, NONE
from harness.stats import ALPHA, median_interval

Results = Mapping[str, Sequence[Mapping[str, Any]]]


def _ops(result: Mapping[str, Any]) -> float | None:
    value = result.get(METRIC)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def paired_ratios(
    variant_results: Results, rounds: Mapping[str, Sequence[int]] | None, base_key: str = NONE
) -> dict[str, list[float]]:
    """{probe set: the ratio of each round that has both it and `base_key`}. Without rounds
    (older run.json), the repeats pair by position when both sides have as many."""
    without = list(variant_results.get(base_key) or [])
    out: dict[str, list[float]] = {}
    for key, results in variant_results.items():
        if key == base_key:
            continue
        pairs: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        if rounds is not None and key in rounds and base_key in rounds:
            base = dict(zip(rounds[base_key], without, strict=False))
            pairs = [
                (base[r], result)
                for r, result in zip(rounds[key], results, strict=False)
                if r in base
            ]
        elif len(results) == len(without):
            pairs = list(zip(without, results, strict=True))
        ratios = []
        for base_result, result in pairs:
            a, b = _ops(base_result), _ops(result)
            if a is not None and b is not None:
                ratios.append(b / a)
        out[key] = ratios
    return out


def smallest_paired_p(n: int) -> float:
    """Smallest two-sided exact signed-rank p with n pairs: all signs alike."""
    return min(1.0, 2.0 / 2**n) if n else 1.0


def interval(ratios: Sequence[float]) -> dict[str, Any]:
    """The figures of one probe set's paired ratios (see the module's docstring)."""
    n = len(ratios)
    if n == 0:
        return {"n": 0, "ratio": None, "significant": False, "reason": "no paired round"}
    low, high, coverage = median_interval(ratios)
    median = statistics.median(ratios)
    logs = [math.log(r) for r in ratios]
    p: float | None = None
    reason = None
    if n < 2 or all(v == 0 for v in logs):
        reason = "one round only" if n < 2 else "every round's ratio is 1"
    else:
        from scipy import stats as sps  # here: a second of start-up most commands never use

        p = float(sps.wilcoxon(logs, alternative="two-sided", method="auto").pvalue)
        if smallest_paired_p(n) >= ALPHA:
            reason = (
                f"{n} rounds cannot reach p < {ALPHA:g} paired (p >= {smallest_paired_p(n):.3g}); "
                "6 rounds can"
            )
    return {
        "n": n,
        "ratio": median,
        "ci95_low": low,
        "ci95_high": high,
        "ci_coverage": coverage,
        "p_value": p,
        "significant": p is not None and p < ALPHA,
        "reason": reason,
    }


def explain_ratios(
    explain: Sequence[Mapping[str, Any]],
    measurement: Sequence[Mapping[str, Any]],
    rounds: Mapping[str, Sequence[int]],
    explain_key: str,
    measurement_key: str,
) -> list[float]:
    """Each explain repeat's ops/s / that of the measurement repeat of its round."""
    both = {explain_key: explain, measurement_key: measurement}
    return paired_ratios(both, rounds, measurement_key)[explain_key]


def cell_intervals(
    variant_results: Results, rounds: Mapping[str, Sequence[int]] | None
) -> dict[str, dict[str, Any]]:
    return {key: interval(r) for key, r in paired_ratios(variant_results, rounds).items()}


def run_intervals(cells: Iterable[Mapping[str, Sequence[float]]]) -> dict[str, dict[str, Any]]:
    """The rounds' ratios of every cell pooled, per probe set."""
    pooled: dict[str, list[float]] = {}
    for ratios in cells:
        for key, values in ratios.items():
            pooled.setdefault(key, []).extend(values)
    return {key: interval(values) for key, values in pooled.items()}


def paired_text(figures: Mapping[str, Any]) -> Text:
    """`0.93x [0.88-0.97]*` (the star: significant), dim when not significant."""
    ratio = human_ratio(float(figures["ratio"]))
    low, high = figures.get("ci95_low"), figures.get("ci95_high")
    span = ""
    if low is not None and high is not None:
        span = f" [{human_ratio(float(low))}{DASH}{human_ratio(float(high))}]"
    star = "*" if figures.get("significant") else ""
    return Text(f"{ratio}{span}{star}", style="" if star else "dim")


def overhead_cpu_shares(cells: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> dict[str, str]:
    """The BPF statistics' CPU share beside each probe set's ratio: a probe's own, and for
    `all` the sum of every probe's (from the main repeats, which run with every probe)."""
    costs = bpfstats.run_costs(cells)
    out = {}
    for key in keys:
        if key in costs and costs[key].get("cpu_share") is not None:
            out[key] = percent(float(costs[key]["cpu_share"]))
        elif key == ALL and costs:
            out[key] = percent(sum(float(c.get("cpu_share") or 0) for c in costs.values()))
    return out


def share_median(results: Sequence[Mapping[str, Any]]) -> float | None:
    """The median `bpf_cpu_share` of some repeats; None when none recorded it."""
    shares = (r.get("bpf_cpu_share") for r in results)
    values = [float(s) for s in shares if isinstance(s, int | float)]
    return statistics.median(values) if values else None


def explain_results(doc: Mapping[str, Any], cell: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A cell's explain repeats (run.json dicts)."""
    key = (doc.get("config") or {}).get("explain_set")
    return list((cell.get("probe_variants") or {}).get(key) or []) if key else []


def explain_footer(doc: Mapping[str, Any]) -> str | None:
    """The one line under the tables of a run with explain repeats: where the figures come
    from, and what the explain repeats' probes cost the workload (docs/probes.md)."""
    config = doc.get("config") or {}
    if not config.get("explain_repeats"):
        return None
    cells = list(doc.get("cells") or [])
    measured = ", ".join(config.get("measurement_probes") or []) or "no probe"
    line = (
        f"figures: the measurement repeats ({measured}); with every probe "
        f"({config.get('explain_set')}): {config['explain_repeats']} explain repeat(s) a cell, "
        "ops/s paired by round explain / measurement "
    )
    ratio = doc.get("explain_ratio") or {}
    if ratio.get("ratio") is not None:
        line += paired_text(ratio).plain + f" over {ratio['n']} rounds"
        if ratio.get("p_value") is not None:
            line += f", p={human_p(float(ratio['p_value']))}"
    else:
        line += f"{DASH} (no round has both)"
    shares = (
        share_median([r for c in cells for r in c.get("repeats") or []]),
        share_median([r for c in cells for r in explain_results(doc, c)]),
    )
    if any(share is not None for share in shares):
        measurement, explain = (percent(s) if s is not None else DASH for s in shares)
        line += f"; BPF CPU share (median repeat): measurement {measurement}, explain {explain}"
    return line
