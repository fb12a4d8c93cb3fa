"""Names a workload gives (strategies, scenarios, parameters, metrics) as a terminal shows them.

A workload's describe and results may hold any string. Printed raw, an escape sequence in a
strategy's name would set the terminal's title or clear its screen; escaped, it shows as text.
"""

from __future__ import annotations

import unicodedata

_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """`text` with its control characters (C0, DEL, C1) escaped: ESC as `\\x1b`, a newline
    as `\\n`. Everything else, other scripts and symbols included, is kept as it is."""
    return "".join(_escaped(char) for char in str(text))


def _escaped(char: str) -> str:
    if unicodedata.category(char) != "Cc":
        return char
    return _SHORT_ESCAPES.get(char) or f"\\x{ord(char):02x}"
