"""What the kinds' sections of `harness probe` share: figures and tables on the terminal."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from harness.format.numbers import DASH, human

TOP = 10
FRAMES_SHOWN = 4  # innermost frames of a folded stack


def ns(value: float | None) -> str:
    return DASH if value is None else human(value, time_ns=True)


def count(value: float) -> str:
    return human(value)


def exact(value: float) -> str:
    """A count to compare with another tool's: every digit, `1,440`."""
    return f"{int(value):,}"


def table(title: str, columns: Sequence[str]) -> Table:
    """Left-aligned first and `comm` columns, the figures right-aligned."""
    out = Table(title=title, title_justify="left")
    for i, name in enumerate(columns):
        out.add_column(name, justify="left" if i == 0 or name in ("comm", "frame") else "right")
    return out


def innermost(folded: str) -> str:
    """`leaf ← caller ← ...` of a folded stack's innermost frames."""
    frames = folded.split(";") if folded else []
    return " ← ".join(reversed(frames[-FRAMES_SHOWN:]))
