"""The consoles the verbs print to: stdout for results, stderr for progress and messages."""

from __future__ import annotations

import os

from rich.console import Console

LOG_WIDTH = 200


def console(stderr: bool = False) -> Console:
    made = Console(stderr=stderr)
    if not made.is_terminal and "COLUMNS" not in os.environ:
        # Logs and pipes have no width: do not squeeze wide tables into rich's default 80.
        made.width = LOG_WIDTH
    return made


def stdout() -> Console:
    return console()


def stderr() -> Console:
    return console(stderr=True)
