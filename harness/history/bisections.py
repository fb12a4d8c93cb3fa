"""The bisections of events' series (`harness history bisect`), kept by the event's run and
the series: what the dashboard shows on the event's row and on the series' page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from harness.format.numbers import DASH, human_p, human_ratio
from harness.history.importer import now_iso
from harness.history.schema import event_bisections

# The ends a bisection can come to and be stored with (bisect.json's status); an interrupted
# or failed one stores nothing.
VERDICTS = ("found", "no-regression", "undecided", "untestable")


@dataclass(frozen=True)
class Bisection:
    run_pk: int
    series_id: int
    verdict: str
    good: str
    bad: str
    first_bad: str | None
    first_bad_subject: str | None
    last_good: str | None
    undecided_until: str | None
    ratio: float | None
    low: float | None
    high: float | None
    p: float | None
    finding: str | None
    diff_flamegraph: str | None
    folder: str
    command: str
    finished_at: str

    def effect_text(self) -> str:
        """`0.10x [0.09x-0.11x] p=0.031` (times signs, an en dash), or '' without figures."""
        if self.ratio is None:
            return ""
        text = human_ratio(self.ratio)
        if self.low is not None and self.high is not None:
            text += f" [{human_ratio(self.low)}{DASH}{human_ratio(self.high)}]"
        return text + (f" p={human_p(self.p)}" if self.p is not None else "")

    def summary(self) -> str:
        """What the bisection came to, in one line."""
        if self.verdict == "found" and self.first_bad is not None:
            return (
                f"first bad commit {self.first_bad[:12]} {self.first_bad_subject or ''}: "
                f"{self.effect_text()}"
            )
        if self.verdict == "no-regression":
            return (
                f"no regression between {self.good[:12]} and {self.bad[:12]}: the bad end "
                "measured not worse than the good one"
            )
        low, high = (self.last_good or self.good)[:12], (self.undecided_until or self.bad)[:12]
        if self.verdict == "untestable":
            return f"untestable between {low} and {high}: the commits between do not build"
        return f"undecided between {low} and {high}: a step stayed undecided after its rounds"


def store(
    conn: Connection,
    run_pk: int,
    series_id: int,
    ends: tuple[str, str],
    command: str,
    doc: Mapping[str, Any],
) -> Bisection:
    """Keep bisect.json's result `doc` of the range `ends` (good, bad) for the series of the
    event of run `run_pk`, in place of an earlier one (the caller's transaction)."""
    verdict = doc.get("status")
    if verdict not in VERDICTS:
        raise ValueError(f"a bisection that ended {verdict!r} is not stored")
    effect = doc.get("effect") or {}
    between = doc.get("undecided_between") or [None, None]
    values = {
        "run_id": run_pk,
        "series_id": series_id,
        "verdict": verdict,
        "good": ends[0],
        "bad": ends[1],
        "first_bad": doc.get("first_bad"),
        "first_bad_subject": doc.get("first_bad_subject"),
        "last_good": doc.get("last_good"),
        "undecided_until": between[1],
        "ratio": effect.get("ratio"),
        "low": effect.get("low"),
        "high": effect.get("high"),
        "p": effect.get("p"),
        "finding": doc.get("finding"),
        "diff_flamegraph": doc.get("diff_flamegraph"),
        "folder": doc["folder"],
        "command": command,
        "finished_at": now_iso(),
    }
    conn.execute(
        delete(event_bisections).where(
            (event_bisections.c.run_id == run_pk) & (event_bisections.c.series_id == series_id)
        )
    )
    conn.execute(insert(event_bisections).values(values))
    return _record(values)


def stored(conn: Connection) -> dict[tuple[int, int], Bisection]:
    """(run pk, series id) -> its bisection."""
    found = {}
    for row in conn.execute(select(event_bisections)):
        values = dict(row._mapping)
        values.pop("id")
        found[(row.run_id, row.series_id)] = _record(values)
    return found


def _record(values: Mapping[str, Any]) -> Bisection:
    fields = dict(values)
    fields["run_pk"] = fields.pop("run_id")
    return Bisection(**fields)
