"""How figures are written: counts and times with SI prefixes, ratios, p-values, shares."""

from __future__ import annotations

import math

DASH = "\N{EN DASH}"
TIMES = "\N{MULTIPLICATION SIGN}"
_COUNT_SCALES = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"))
_NS_SCALES = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))


def is_time_metric(name: str, unit: str | None = None) -> bool:
    return unit == "ns" or any(part.endswith("_ns") or "_ns_" in part for part in name.split("."))


def _digits(value: float, compact: bool) -> str:
    """3 significant digits (4 from 100 up unless compact), never "10.00" for 9.996."""
    if abs(value) < 1 and abs(float(f"{value:.3g}")) < 1:
        return f"{value:.3g}"
    bands = ((10.0, ".2f"), (100.0 if compact else 1000.0, ".1f"), (math.inf, ".0f"))
    for limit, spec in bands:
        text = format(value, spec)
        if abs(float(text)) < limit:
            return text
    return text


def human(value: float, time_ns: bool = False, compact: bool = False) -> str:
    """1858276 -> 1.86M, 549975 -> 550.0k (compact: 550k); time_ns: 1240000 -> 1.24ms."""
    scales = _NS_SCALES if time_ns else _COUNT_SCALES
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value.is_integer() and abs(value) < 1000:
        return f"{int(value)}{scales[0][1]}"
    index = 0
    for i, (factor, _) in enumerate(scales):
        if abs(value) >= factor:
            index = i
    text = _digits(value / scales[index][0], compact)
    # Rounding can carry into the next scale: 999.96k is shown as 1.00M, not 1000.0k.
    if abs(float(text)) >= 1000 and index + 1 < len(scales):
        index += 1
        text = _digits(value / scales[index][0], compact)
    if abs(float(text)) >= 1000:  # past the largest prefix: 1.2e17, not 120000T
        unit, suffix = (1e9, "s") if time_ns else (1.0, "")
        return scientific(value / unit) + suffix
    return text + scales[index][1]


def scientific(value: float) -> str:
    """3 significant digits and a plain exponent: 1.2e17, 1.8e308, -5.5e15."""
    mantissa, _, exponent = f"{value:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def thousands(value: float) -> str:
    """2000000 -> 2,000,000; from 1e15 on (past T) in scientific notation, 1.2e17."""
    return f"{value:,.0f}" if abs(value) < _COUNT_SCALES[-1][0] * 1000 else scientific(value)


def human_ratio(ratio: float) -> str:
    if ratio >= 1000:  # 1.2e5x, not its digits
        return f"{scientific(ratio)}{TIMES}"
    if ratio >= 10:
        return f"{ratio:.1f}{TIMES}"
    if ratio >= 0.1:
        return f"{ratio:.2f}{TIMES}"
    return f"{ratio:.2g}{TIMES}"


def human_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.2g}"


def _split_suffix(text: str) -> tuple[str, str]:
    number = text.rstrip("kMGTnmµs")
    return number, text[len(number) :]


def join_range(low: str, high: str) -> str:
    """One suffix for both ends when they share it: 1.85M and 1.88M give 1.85-1.88M (en dash)."""
    low_num, low_unit = _split_suffix(low)
    high_num, high_unit = _split_suffix(high)
    if low_unit == high_unit:
        return f"{low_num}{DASH}{high_num}{high_unit}"
    return f"{low}{DASH}{high}"


def percent(share: float) -> str:
    """0.273 -> 27.3%, 0.016 -> 1.6%, 0.0004 -> 0.04%."""
    value = 100 * share
    return f"{value:.1f}%" if value >= 1 or value == 0 else f"{value:.2g}%"
