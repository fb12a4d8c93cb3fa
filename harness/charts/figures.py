"""matplotlib for the charts: loaded on the first chart drawn (a harness command that draws
none starts without it), files only, written atomically."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from harness.base.writes import write_atomic


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path, dpi: int, svg: bool = False) -> None:
    """The figure as PNG at `path` (and as SVG beside it), then closed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    formats = ((path, "png"), (path.with_suffix(".svg"), "svg")) if svg else ((path, "png"),)
    for file, fmt in formats:
        out = io.BytesIO()
        fig.savefig(out, format=fmt, dpi=dpi, bbox_inches="tight")
        write_atomic(file, out.getvalue())
    pyplot().close(fig)
