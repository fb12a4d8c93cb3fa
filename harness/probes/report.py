"""The readable summary of `harness probe`: each probe's section, as its kind writes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from harness.probes import registry


def print_probe_report(doc: Mapping[str, Any], console: Console) -> None:
    pids = ", ".join(str(p) for p in doc.get("pids") or [])
    console.print(Text(f"probed pid {pids} for {doc.get('duration_s')} s", style="bold"))
    for name, data in (doc.get("probes") or {}).items():
        if "unavailable" in data:
            console.print(Text(f"{name}: unavailable: {data['unavailable']}", style="yellow"))
        elif "not_applicable" in data:
            console.print(Text(f"{name}: does not apply: {data['not_applicable']}", style="dim"))
        elif "error" in data:
            console.print(Text(f"{name}: failed: {data['error']}", style="red"))
        else:
            registry.kind_of(name).section(name, data, console)
