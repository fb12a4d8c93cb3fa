"""Charts drawn as inline SVG when the site is written: sparklines and trend charts (no
plotting library, nothing to load)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT, PAD = 760, 260, 40


def _scale(values: Sequence[float], size: float, pad: float) -> tuple[float, float]:
    low, high = min(values), max(values)
    span = (high - low) or abs(high) * 0.01 or 1.0
    return low - span * 0.1, (size - 2 * pad) / (span * 1.2)


def sparkline(values: Sequence[float], width: int = 120, height: int = 28) -> str:
    if not values:
        return ""
    low, per = _scale(values, height, 2)
    step = (width - 4) / max(1, len(values) - 1)
    coords = " ".join(
        f"{2 + i * step:.1f},{height - 2 - (v - low) * per:.1f}" for i, v in enumerate(values)
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<polyline fill="none" stroke="#2563eb" stroke-width="1.5" points="{coords}"/></svg>'
    )


def trend(
    points: Sequence[tuple[float, float | None, float | None, str, str]],
    marks: Sequence[tuple[int, str, str]],
    unit: str,
) -> str:
    """points: (median, low, high, link, title); marks: (point index, css class, title)."""
    if not points:
        return "<p>no points</p>"
    values = [p[0] for p in points] + [v for p in points for v in p[1:3] if v is not None]
    low, per = _scale(values, HEIGHT, PAD)
    step = (WIDTH - 2 * PAD) / max(1, len(points) - 1)

    def x(i: int) -> float:
        return PAD + (i * step if len(points) > 1 else (WIDTH - 2 * PAD) / 2)

    def y(v: float) -> float:
        return HEIGHT - PAD - (v - low) * per

    parts = [
        f'<svg class="trend" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'role="img">'
    ]
    upper = [(x(i), y(p[2])) for i, p in enumerate(points) if p[2] is not None]
    lower = [(x(i), y(p[1])) for i, p in enumerate(points) if p[1] is not None]
    if upper and lower:
        band = " ".join(f"{a:.1f},{b:.1f}" for a, b in upper + lower[::-1])
        parts.append(f'<polygon class="band" points="{band}"/>')
    line = " ".join(f"{x(i):.1f},{y(p[0]):.1f}" for i, p in enumerate(points))
    parts.append(f'<polyline class="line" points="{line}"/>')
    for index, css, title in marks:
        parts.append(
            f'<line class="{css}" x1="{x(index):.1f}" x2="{x(index):.1f}" y1="{PAD / 2}" '
            f'y2="{HEIGHT - PAD}"><title>{escape(title)}</title></line>'
        )
    for i, (median, _, _, link, title) in enumerate(points):
        parts.append(
            f'<a href="{escape(link)}"><circle class="point" cx="{x(i):.1f}" '
            f'cy="{y(median):.1f}" r="3.5"><title>{escape(title)}</title></circle></a>'
        )
    top, bottom = max(values), min(values)
    parts.append(
        f'<text x="4" y="{y(top) + 4:.1f}">{top:.4g}</text>'
        f'<text x="4" y="{y(bottom) + 4:.1f}">{bottom:.4g}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" text-anchor="end">{escape(unit)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)
