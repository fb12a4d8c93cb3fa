"""What user-facing text (suite descriptions, describe's help, --help) may not say: the
product speaks of itself, not of the tracker its changes came from."""

from __future__ import annotations

import re

# "issue #13", "Issues #4", "(#13)"; an upstream project's reference, "seastar PR #1766",
# names what a suite reproduces and stays.
ISSUE_REF = re.compile(r"\bissues?\s*#\s*\d+|\(#\d+\)", re.IGNORECASE)


def issue_refs(text: str) -> list[str]:
    return ISSUE_REF.findall(text)
