"""The collectors' log2 histograms: slot i counts values in [2^i, 2^(i+1)) ns."""

from __future__ import annotations

from collections.abc import Sequence


def bucket_bounds(slot: int) -> tuple[float, float]:
    """Slot i of the collectors' log2 histograms holds [2^i, 2^(i+1)) ns; slot 0 [0, 2)."""
    return (0.0 if slot == 0 else float(2**slot)), float(2 ** (slot + 1))


def hist_quantile(hist: Sequence[int], q: float) -> float | None:
    """The q-quantile of a log2 histogram, interpolated linearly inside its bucket.

    The rank q*N falls in the bucket where the running count reaches it; the value is that
    bucket's lower bound plus the same fraction of its width as the rank's position among the
    bucket's counts (values assumed spread evenly in the bucket). The last slot, which also
    holds everything longer, is treated as [2^i, 2^(i+1)) too. None for an empty histogram.
    """
    total = sum(hist)
    if total <= 0:
        return None
    rank = q * total
    below = 0
    for slot, count in enumerate(hist):
        if count and below + count >= rank:
            low, high = bucket_bounds(slot)
            return low + (high - low) * max(0.0, rank - below) / count
        below += count
    return None  # unreachable: the running count reaches total


def add_hists(hists: Sequence[Sequence[int]]) -> list[int]:
    out = [0] * max((len(h) for h in hists), default=0)
    for hist in hists:
        for slot, count in enumerate(hist):
            out[slot] += count
    return out
