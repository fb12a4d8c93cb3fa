"""`harness list`: what every suite offers, as JSON entries and as tables."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness import kept
from harness.describe import Description
from harness.format.names import printable
from harness.params import render
from harness.suites import Suite

# The modules whose code lays the tables out: a kept text is of their files as they were.
_DRAWN_BY = ("harness.listing", "harness.format.names", "harness.describe", "rich.table")


def suite_entry(
    suite: Suite,
    description: Description | None,
    problem: str | None,
    shadowed_by: Suite | None = None,
) -> dict[str, Any]:
    """One suite for `harness list --json`; `problem` says why there is no description,
    `shadowed_by` is the earlier suite of the same name that hides this one."""
    entry: dict[str, Any] = {
        "name": suite.name,
        "description": suite.description,
        "folder": str(suite.folder),
        "binary": str(suite.binary),
        "built": suite.built,
        "status": problem or "ok",
        "shadowed_by": None if shadowed_by is None else str(shadowed_by.folder),
    }
    if description is None:
        return entry
    entry.update(
        baseline=suite.baseline or description.baseline,
        default_scenario=description.default_scenario,
        strategies=[
            {"name": s.name, "help": s.help, "compare_with": s.compare_with}
            for s in description.strategies
        ],
        scenarios=[
            {"name": s.name, "help": s.help, "params": s.params} for s in description.scenarios
        ],
        params=[
            {
                "name": p.name,
                "type": p.type,
                "default": p.default,
                "valid": p.valid_values(),
                "min": p.min,
                "max": p.max,
                "choices": list(p.choices),
                "help": p.help,
            }
            for p in description.params.values()
        ],
        metrics=list(description.metrics),
    )
    return entry


def print_suites_kept(entries: Sequence[dict[str, Any]], console: Console) -> None:
    """print_suites, its text kept (<results>/cache/list.json) for the next call with the same
    entries on a console of the same size, colours and kind (terminal or not), by the same
    code: laying the tables out is most of `harness list`'s time."""
    try:
        code = [kept.stat_key(os.stat(str(sys.modules[m].__file__))) for m in _DRAWN_BY]
    except OSError:
        print_suites(entries, console)
        return
    options = [repr(console.options), console.color_system, console.no_color]
    key = kept.digest([list(entries), options, code])
    entry = kept.path("list.json")
    text = kept.read(entry, key)
    if text is None:
        with console.capture() as capture:
            print_suites(entries, console)
        text = capture.get()
        kept.write(entry, key, text)
    try:
        console.file.write(text)
        console.file.flush()
    except BrokenPipeError:  # `harness list | head`: as rich's own print ends
        console.on_broken_pipe()


def print_suites(entries: Sequence[dict[str, Any]], console: Console) -> None:
    """The suites as tables; every text a suite or its workload gives is shown escaped
    (harness/format/names.py)."""
    if not entries:
        console.print("no suites found (a suite is a folder with a suite.toml)")
    for entry in entries:
        heading = Text(printable(entry["name"]), style="bold")
        console.print(heading.append(f": {printable(entry['description'])}", style=""))
        console.print(Text(f"  folder: {printable(entry['folder'])}"))
        if entry["status"] != "ok":
            console.print(Text(f"  {printable(entry['status'])}", style="yellow"))
            console.print()
            continue
        console.print(
            Text(
                f"  baseline: {printable(entry['baseline'])}   "
                f"default scenario: {printable(entry['default_scenario'])}"
            )
        )
        twins = any(s["compare_with"] for s in entry["strategies"])
        strategies = Table("strategy", "help", title="strategies", title_justify="left")
        if twins:  # the strategies compared with their twin rather than the baseline
            strategies.add_column("compared with")
        for s in entry["strategies"]:
            against = "-" if s["name"] == entry["baseline"] else entry["baseline"]
            twin = [s["compare_with"] or against] if twins else []
            strategies.add_row(*_cells(s["name"], s["help"], *twin))
        scenarios = Table("scenario", "sets", "help", title="scenarios", title_justify="left")
        for s in entry["scenarios"]:
            sets = ", ".join(f"{k}={render(v)}" for k, v in s["params"].items())
            scenarios.add_row(*_cells(s["name"], sets or "-", s["help"]))
        params = Table(
            "parameter",
            "type",
            "default",
            "valid",
            "help",
            title="parameters",
            title_justify="left",
        )
        for p in entry["params"]:
            params.add_row(
                *_cells(p["name"], p["type"], render(p["default"]), p["valid"], p["help"])
            )
        console.print(strategies, scenarios, params)
        console.print()


def _cells(*texts: object) -> list[Text]:
    """Table cells of texts shown as they are: escaped, and never read as rich markup."""
    return [Text(printable(text)) for text in texts]
