"""`harness bisect`: the first commit of a range whose build is worse than the good end's.

The good end is built in one slot (a worktree at a fixed path, worktrees.py) and every
tested commit in another, one after another, so that each rebuild is incremental
(builds.py); each is measured against the good end's build interleaved and paired by round
(duet.py); search.py decides and picks the next commit. The bisection's folder
(<results>/bisect/<id>/) keeps bisect.json, each step's rounds (steps/) and the build logs;
its worktrees and caches go at the end."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.base.stop import stop_on_signals
from harness.bisect import cells, gitrepo, search
from harness.bisect.builds import Build, BuildInterrupted, build
from harness.bisect.duet import Duet, Interrupted, SideFailed, Stopped, Timing, add_rounds
from harness.bisect.report import duration, effect_of, ratio_text
from harness.bisect.target import Target
from harness.bisect.why import Why
from harness.bisect.worktrees import Workspace, reclaim
from harness.describe import describe
from harness.errors import BadInput, HarnessError
from harness.paths import results_root
from harness.run.plan import Cell
from harness.suites import Suite

Say = Callable[[str], None]
# Why the first bad build is worse than the last good one (the finding, the differential
# flame graph, each run's graphs), from runs of both builds with the profiles; given the
# builds, the cell and the folder to write in (harness/commands/bisect.py makes them with
# `harness run`'s machinery).
Explain = Callable[[Suite, Suite, Cell, Path], Why]
REFERENCE = "good"  # the slot of the good end's build, every step's reference
CANDIDATE = "candidate"  # the slot of the bad end's, then each step's


@dataclass(frozen=True)
class Request:
    target: Target
    good: str  # full hashes
    bad: str
    choice: cells.Choice
    timing: Timing
    rounds: int  # a step's first rounds
    max_rounds: int  # the bound an undecided step may grow to


def check(target: Target, good_rev: str, bad_rev: str) -> tuple[str, str, list[str]]:
    """The ends as full hashes and the commits between them; BadInput before anything is
    built for an unknown revision or good not an ancestor of bad."""
    good = gitrepo.resolve(target.repo, good_rev, "--good")
    bad = gitrepo.resolve(target.repo, bad_rev, "--bad")
    if good == bad:
        raise BadInput(f"--good and --bad are the same commit ({good[:12]})")
    if not gitrepo.is_ancestor(target.repo, good, bad):
        raise BadInput(f"--good {good_rev} ({good[:12]}) is not an ancestor of --bad {bad_rev}")
    commits = gitrepo.commits_between(target.repo, good, bad)
    if not commits or commits[-1] != bad:
        raise BadInput(f"no first-parent path of commits from {good[:12]} to {bad[:12]}")
    for end, option in ((good, "--good"), (bad, "--bad")):
        if not gitrepo.has_file(target.repo, end, target.manifest):
            raise BadInput(f"{option} {end[:12]} has no {target.manifest}")
    return good, bad, commits


class Bisection:
    def __init__(self, request: Request, say: Say, explain: Explain | None = None) -> None:
        self.request = request
        self.say = say
        self.explain = explain
        # The commit whose build each slot holds, and that build's suite.
        self.slots: dict[str, tuple[str, Suite]] = {}
        self.steps: list[dict[str, Any]] = []
        self.doc: dict[str, Any] = {
            "first_bad": None,
            "last_good": None,
            "effect": None,
            "steps": self.steps,
            "finding": None,
            "diff_flamegraph": None,
        }
        self.step_seconds: list[float] = []
        self.undecided_needs: int | None = None  # the rounds the undecided step needed
        self.builds: list[dict[str, Any]] = []
        self.doc["builds"] = self.builds

    def run(self, commits: list[str]) -> dict[str, Any]:
        request = self.request
        for folder in reclaim(results_root()):
            self.say(f"bisect: reclaimed the worktrees of an abandoned bisection: {folder}")
        workspace = Workspace(results_root() / "bisect", request.target.repo)
        (workspace.folder / "steps").mkdir()
        self.doc["folder"] = str(workspace.folder)
        self.workspace = workspace
        started = time.monotonic()
        try:
            with stop_on_signals() as stop:
                self.stop = stop
                try:
                    self._bisect(commits)
                except (Interrupted, BuildInterrupted):
                    self.doc["status"] = "interrupted"
                    raise Stopped("bisection interrupted") from None
                except Stopped:  # while explaining
                    self.doc["status"] = "interrupted"
                    raise
        finally:
            self.doc["seconds"] = round(time.monotonic() - started, 1)
            workspace.close()
            (workspace.folder / "bisect.json").write_text(json.dumps(self.doc, indent=2) + "\n")
        return self.doc

    def _build(self, commit: str, slot: str) -> Build:
        info = gitrepo.commit_info(self.request.target.repo, commit)
        self.say(f"bisect: building {info.short} {info.subject[:60]}")
        self.slots.pop(slot, None)
        done = build(self.workspace, self.request.target, commit, self.stop, slot)
        if done.suite is not None:
            self.slots[slot] = (commit, done.suite)
            self.say(f"bisect: built {info.short} in {duration(done.seconds or 0.0)}")
            self.builds.append({"commit": commit, "slot": slot,
                                "seconds": round(done.seconds or 0.0, 1)})  # fmt: skip
        return done

    def _built(self, commit: str, slot: str) -> Suite:
        """The build of `commit` in `slot`, built again there unless it is the slot's."""
        held = self.slots.get(slot)
        if held is not None and held[0] == commit:
            return held[1]
        done = self._build(commit, slot)
        if done.suite is None:
            raise HarnessError(f"{commit[:12]} did not build again: {done.reason}")
        return done.suite

    def _bisect(self, commits: list[str]) -> None:
        request = self.request
        good_build = self._build(request.good, REFERENCE)
        if good_build.suite is None:
            raise HarnessError(
                f"the good end {request.good[:12]} does not build: {good_build.reason}"
            )
        reference: Suite = good_build.suite
        description = describe(reference)
        (cell,) = cells.cells(reference, description, request.choice, default_one=True)
        self.metric, self.better = cells.metric(description, request.choice.metric)
        bad_build = self._build(request.bad, CANDIDATE)
        if bad_build.suite is None:
            raise HarnessError(f"the bad end {request.bad[:12]} does not build: {bad_build.reason}")
        cells.check_other(describe(bad_build.suite), [cell], "bad end's")
        self.doc.update(cell=cell.id, metric=self.metric, better=self.better)
        self.cell = cell
        self.say(
            f"bisect: {len(commits)} commits from {request.good[:12]} to {request.bad[:12]}; "
            f"cell {cell.label}, {self.metric} ({self.better} is better), about "
            f"{search.about_steps(len(commits) - 1)} steps after checking the ends"
        )
        # The ends first: is the bad end worse at all?
        ends = self._duet(reference, bad_build.suite, cell, request.bad, "ends")
        verdict, needed = self._settle(
            reference, bad_build.suite, ends, lambda f: search.range_verdict(f, self.better), None
        )
        figures = ends.figures()
        self.doc["range"] = effect_of(figures) | {"rounds": ends.rounds, "rounds_needed": needed}
        self.say(
            f"bisect: bad end against good end: {ratio_text(figures)} over {ends.rounds} rounds"
        )
        if verdict != search.BAD:
            self.doc["status"] = "no-regression"
            self.say(
                f"bisect: no regression in this range: {request.bad[:12]} is not worse than "
                f"{request.good[:12]} in {self.metric} ({ratio_text(figures)})"
                + (_needs(needed, request.max_rounds) if verdict == search.UNDECIDED else "")
            )
            return
        effect = search.worse(float(figures["ratio"]), self.better)
        self.measured: dict[str, dict[str, Any]] = {request.bad: figures}
        outcome = search.search(
            commits, lambda c, k, about: self._step(reference, cell, c, k, about, effect)
        )
        self._finish(commits, outcome)

    def _duet(self, a: Suite, b: Suite, cell: Cell, commit: str, name: str) -> Duet:
        duet = Duet(cell, self.metric)
        add_rounds(duet, a, b, self.request.rounds, self.request.timing, self.stop)
        self.duet_file = self.workspace.folder / "steps" / f"{name}-{commit[:12]}.json"
        duet.save(self.duet_file)
        return duet

    def _settle(
        self, a: Suite, b: Suite, duet: Duet, judge: Callable[[dict[str, Any]], str],
        effect: float | None,
    ) -> tuple[str, int | None]:  # fmt: skip
        """The duet's verdict after as many more rounds as its spread says it needs (at most
        doubling its rounds at a time, so that the estimate is made again), up to the bound;
        undecided at once when it would need more than the bound. Also: the rounds needed."""
        bound = self.request.max_rounds
        verdict = judge(duet.figures())
        needed = None
        while verdict == search.UNDECIDED and duet.rounds < bound:
            needed = search.rounds_needed(duet.ratios, self.better, effect)
            if needed is not None and needed > bound:
                break
            wanted = (needed or 0) - duet.rounds
            more = min(max(self.request.rounds, wanted), max(duet.rounds, 1), bound - duet.rounds)
            add_rounds(duet, a, b, more, self.request.timing, self.stop)
            verdict = judge(duet.figures())
        duet.save(self.duet_file)  # with the rounds added
        if verdict != search.UNDECIDED:
            needed = None
        return verdict, needed

    def _step(
        self, reference: Suite, cell: Cell, commit: str, k: int, about: int, effect: float
    ) -> str:
        if self.stop.requested:
            raise Interrupted
        started = time.monotonic()
        info = gitrepo.commit_info(self.request.target.repo, commit)
        built = self._build(commit, CANDIDATE)
        record: dict[str, Any] = {"commit": commit, "verdict": search.SKIP, "ratio": None,
                                  "low": None, "high": None, "rounds": 0,
                                  "build_s": round(built.seconds or 0.0, 1)}  # fmt: skip
        if built.suite is None:
            self.say(f"bisect: step {k} of ~{about}: {info.short} skipped: {built.reason}")
            record["reason"] = built.reason
            self.steps.append(record)
            return search.SKIP
        try:
            duet = self._duet(reference, built.suite, cell, commit, f"step{k}")
            verdict, needed = self._settle(
                reference, built.suite, duet,
                lambda f: search.step_verdict(f, self.better, effect), effect,
            )  # fmt: skip
        except SideFailed as err:
            if err.side == "A":
                raise HarnessError(f"the good end's build {err}") from err
            self.say(f"bisect: step {k} of ~{about}: {info.short} skipped: {err}")
            record["reason"] = str(err)
            self.steps.append(record)
            return search.SKIP
        figures = duet.figures()
        self.measured[commit] = figures
        record.update(verdict=verdict, rounds=duet.rounds, **_ends(figures))
        if needed is not None:
            record["rounds_needed"] = needed
            self.undecided_needs = needed
        self.steps.append(record)
        self.step_seconds.append(time.monotonic() - started)
        left = max(0, about - k)
        eta = f", ETA {duration(left * sum(self.step_seconds) / len(self.step_seconds))}"
        self.say(
            f"bisect: step {k} of ~{about}: {info.short} {info.subject[:50]}: "
            f"{ratio_text(figures)} over {duet.rounds} rounds -> {verdict}{eta}"
            + (_needs(needed, self.request.max_rounds) if verdict == search.UNDECIDED else "")
        )
        return verdict

    def _finish(self, commits: list[str], outcome: search.Outcome) -> None:
        request = self.request
        last_good = request.good if outcome.last_good < 0 else commits[outcome.last_good]
        first_bad = commits[outcome.first_bad]
        self.doc["last_good"] = last_good
        if outcome.status != "found":
            self.doc["status"] = outcome.status
            self.doc["undecided_between"] = [last_good, first_bad]
            why = (
                "the commits between do not build"
                if outcome.status == "untestable"
                else "a step stayed undecided" + _needs(self.undecided_needs, request.max_rounds)
            )
            self.say(f"bisect: undecided between {last_good[:12]} and {first_bad[:12]}: {why}")
            return
        self.doc["status"] = "found"
        self.doc["first_bad"] = first_bad
        figures = self.measured.get(first_bad) or {}
        self.doc["effect"] = effect_of(figures)
        info = gitrepo.commit_info(request.target.repo, first_bad)
        self.doc["first_bad_subject"] = info.subject
        self.doc["first_bad_date"] = info.author_date
        self.say(f"bisect: first bad commit: {info.hash} {info.subject} ({info.author_date})")
        self.say(
            f"bisect: effect on {self.metric}: {ratio_text(figures)} against {request.good[:12]}"
        )
        if self.explain is not None:
            self.say(
                f"bisect: explaining: runs of {last_good[:12]} and {first_bad[:12]} with profiles"
            )
            # Each build is taken from the slot that holds it; the other is built again,
            # incrementally, in the other slot (the good end's is no longer a reference).
            held = self.slots.get(CANDIDATE)
            swap = held is not None and held[0] == last_good
            good_slot, bad_slot = (CANDIDATE, REFERENCE) if swap else (REFERENCE, CANDIDATE)
            good_suite = self._built(last_good, good_slot)
            bad_suite = self._built(first_bad, bad_slot)
            found = self.explain(good_suite, bad_suite, self.cell, self.workspace.folder / "why")
            graph = found.diff_flamegraph
            self.doc["finding"] = found.finding
            self.doc["diff_flamegraph"] = str(graph) if graph is not None else None
            self.doc["why_graphs"] = found.graphs
            if found.finding:
                self.say(f"bisect: why: {found.finding}")
            if graph is not None:
                self.say(f"bisect: differential flame graph: {graph}")
            for side, graphs in found.graphs.items():
                for kind, path in graphs.items():
                    self.say(f"bisect: {side.replace('_', ' ')} build's {kind} graph: {path}")


def _needs(needed: int | None, bound: int) -> str:
    """`: its spread needs about 140 rounds, past --max-rounds 18`"""
    if needed is None:
        return f" after {bound} rounds"
    if needed > bound:
        return f": its spread needs about {needed} rounds, past --max-rounds {bound}"
    return f" after {bound} rounds (its spread needs about {needed})"


def _ends(figures: dict[str, Any]) -> dict[str, Any]:
    effect = effect_of(figures)
    return {"ratio": effect["ratio"], "low": effect["low"], "high": effect["high"]}
