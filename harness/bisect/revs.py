"""`harness run TARGET --rev A --rev B`: is B faster than A? Both revisions' builds of the same
cells, measured interleaved and paired by round (duet.py), and one table of B against A.
A and B are built in two slots (worktrees at fixed paths, builds.py), B's starting from A's
build folder. The folder <results>/revs/<id>/ keeps revs.json and the build logs; the
worktrees go."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.base.stop import stop_on_signals
from harness.bisect import cells, gitrepo
from harness.bisect.builds import BuildInterrupted, build
from harness.bisect.duet import Duet, Interrupted, Stopped, Timing, add_rounds
from harness.bisect.report import duration, effect_of, ratio_text, value_text
from harness.bisect.target import Target
from harness.bisect.worktrees import Workspace, reclaim
from harness.describe import describe
from harness.errors import BadInput, HarnessError
from harness.paths import results_root
from harness.stats import ALPHA

Say = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    target: Target
    revs: tuple[str, str]  # as the user wrote them
    choice: cells.Choice
    timing: Timing
    rounds: int


def check(target: Target, revs: list[str]) -> tuple[str, str]:
    if len(revs) != 2:
        raise BadInput(f"--rev: give two revisions (A, then B to compare with it), got {len(revs)}")
    a = gitrepo.resolve(target.repo, revs[0], "--rev")
    b = gitrepo.resolve(target.repo, revs[1], "--rev")
    for commit, rev in ((a, revs[0]), (b, revs[1])):
        if not gitrepo.has_file(target.repo, commit, target.manifest):
            raise BadInput(f"--rev {rev} ({commit[:12]}) has no {target.manifest}")
    return a, b


def compare_revs(request: Request, hashes: tuple[str, str], say: Say) -> dict[str, Any]:
    """Build both, measure every cell `rounds` times interleaved, return revs.json."""
    for folder in reclaim(results_root()):
        say(f"harness: reclaimed the worktrees of an abandoned bisection: {folder}")
    workspace = Workspace(results_root() / "revs", request.target.repo)
    doc: dict[str, Any] = {"a": hashes[0], "b": hashes[1], "folder": str(workspace.folder)}
    started = time.monotonic()
    try:
        with stop_on_signals() as stop:
            try:
                built = []
                for commit, slot in zip(hashes, ("a", "b"), strict=True):
                    info = gitrepo.commit_info(request.target.repo, commit)
                    say(f"harness: building {info.short} {info.subject[:60]}")
                    one = build(workspace, request.target, commit, stop, slot)
                    if one.suite is None:
                        raise HarnessError(f"{commit[:12]} does not build: {one.reason}")
                    say(f"harness: built {info.short} in {duration(one.seconds or 0.0)}")
                    built.append(one.suite)
                a, b = built
                description = describe(a)
                chosen = cells.cells(a, description, request.choice, default_one=False)
                cells.check_other(describe(b), chosen, "B")
                metric, better = cells.metric(description, request.choice.metric)
                doc.update(metric=metric, better=better)
                duets = [Duet(cell, metric) for cell in chosen]
                measuring = time.monotonic()  # the ETA is the rounds', not the builds'
                for r in range(request.rounds):
                    for duet in duets:
                        add_rounds(duet, a, b, 1, request.timing, stop)
                    left = (request.rounds - r - 1) * (time.monotonic() - measuring) / (r + 1)
                    say(f"harness: round {r + 1} of {request.rounds} done, ETA {duration(left)}")
                doc["cells"] = [_row(duet) for duet in duets]
            except (Interrupted, BuildInterrupted):
                raise Stopped("interrupted") from None
    finally:
        doc["seconds"] = round(time.monotonic() - started, 1)
        workspace.close()
        (workspace.folder / "revs.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def _row(duet: Duet) -> dict[str, Any]:
    figures = duet.figures()
    a, b = duet.medians()
    return {
        "cell": duet.cell.id,
        "a_median": a,
        "b_median": b,
        "rounds": duet.rounds,
        **effect_of(figures),
        "significant": bool(figures.get("significant")),
        "text": ratio_text(figures),
    }


def table(doc: dict[str, Any]) -> str:
    """One line a cell: A's and B's medians, B / A paired by round, and what it means."""
    a, b = doc["a"][:12], doc["b"][:12]
    metric, better = doc["metric"], doc["better"]
    rows = [("cell", f"A {a}", f"B {b}", "B/A paired [95% CI] p", "")]
    for cell in doc["cells"]:
        ratio = cell["ratio"]
        if ratio is None:
            meaning = "no paired round"
        elif not cell["significant"]:
            meaning = f"no difference at p<{ALPHA:g}"
        else:
            up = ratio > 1
            meaning = "B better" if up == (better == "higher") else "B worse"
        rows.append((cell["cell"], value_text(cell["a_median"]), value_text(cell["b_median"]),
                     cell["text"], meaning))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [f"{metric} ({better} is better), medians of {doc['cells'][0]['rounds']} rounds"
             if doc["cells"] else metric]  # fmt: skip
    for row in rows:
        lines.append(
            "  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)).rstrip()
        )
    return "\n".join(lines)
