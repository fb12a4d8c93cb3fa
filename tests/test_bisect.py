"""`harness bisect` and `harness run --rev A --rev B` on git repositories made here, with an
external contract-v1 workload (tests/bisectrepo.py) whose commits change its work per
operation; and the bisection's verdicts and search on their own."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from bisectrepo import BASE_WORK, git, make_repo
from conftest import HARNESS, run_harness

from harness.bisect import search

pytestmark = pytest.mark.unit

# 6 rounds a step, 12 for one that a preempted round left undecided.
QUICK = ["--rounds", "6", "--max-rounds", "12", "--duration-s", "0.1", "--warmup-s", "0"]
NO_WHY = ["--explain-repeats", "0"]  # the explanation's profiles: test_bisect_why.py
SLOW = BASE_WORK * 10


def bisect(repo: Path, good: str, bad: str, env: dict[str, str], *more: str) -> dict:
    done = run_harness(
        [
            "bisect",
            str(repo / "bench"),
            "--good",
            good,
            "--bad",
            bad,
            *QUICK,
            *NO_WHY,
            "--json",
            *more,
        ],
        env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    doc: dict = json.loads(done.stdout)
    doc["stderr"] = done.stderr
    return doc


def state(repo: Path) -> tuple[str, str, str, list[str]]:
    """HEAD, the index's bytes, the working tree's status, and the worktrees git knows."""
    index = hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()
    worktrees = [
        line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]  # fmt: skip
    return git(repo, "rev-parse", "HEAD"), index, git(repo, "status", "--porcelain"), worktrees


def dirty(repo: Path) -> None:
    """A change of the user's, staged and unstaged, that a bisection must leave alone."""
    (repo / "notes.txt").write_text("mine, staged\n")
    git(repo, "add", "notes.txt")
    (repo / "bench" / "work.txt").write_text("7\n")


def test_bisect_names_the_commit_that_adds_work_per_op(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK] * 5 + [SLOW] * 4)
    dirty(repo)
    before = state(repo)
    doc = bisect(repo, hashes[0], hashes[-1], harness_env, "--strategies", "spin")
    assert doc["status"] == "found", doc["stderr"]
    assert doc["first_bad"] == hashes[5]
    assert doc["last_good"] == hashes[4]
    assert doc["effect"]["ratio"] < 0.5 and doc["effect"]["high"] < 1
    assert doc["effect"]["p"] < 0.05
    assert 1 <= len(doc["steps"]) <= 4
    assert {s["verdict"] for s in doc["steps"]} <= {"good", "bad"}
    assert all(
        set(s) >= {"commit", "verdict", "ratio", "low", "high", "rounds"} for s in doc["steps"]
    )
    assert "step 1 of ~3" in doc["stderr"] and "ETA" in doc["stderr"]
    assert f"first bad commit: {hashes[5]} chew: {SLOW} iterations an op" in doc["stderr"]
    assert state(repo) == before
    assert doc["finding"] is None and doc["diff_flamegraph"] is None  # --explain-repeats 0
    folder = Path(doc["folder"])
    assert json.loads((folder / "bisect.json").read_text())["first_bad"] == hashes[5]
    assert not (folder / "worktrees").exists() and not (folder / "cache").exists()
    saved = {json.loads(f.read_text())["rounds"] for f in (folder / "steps").glob("step*.json")}
    assert saved == {s["rounds"] for s in doc["steps"]}  # every round of each step is kept
    builds_reuse_two_slots(folder, doc)


def builds_reuse_two_slots(folder: Path, doc: dict) -> None:
    """Every build ran in one of two worktree paths, the good end's and the candidates', and
    each candidate's build found the builds before it in its slot's target folder (the first
    one a copy of the good end's): each rebuild can be incremental."""
    counts: dict[str, list[int]] = {}
    for one in doc["builds"]:
        log = (folder / "logs" / f"build-{one['commit'][:12]}.log").read_text()
        where, _, count = log.rpartition("built in ")[2].strip().partition(": build ")
        assert where == str(folder / "worktrees" / one["slot"] / "bench"), log
        counts.setdefault(one["slot"], []).append(int(count))
    assert set(counts) == {"good", "candidate"}
    assert counts["good"][0] == 1
    assert counts["candidate"] == list(range(2, 2 + len(counts["candidate"])))
    assert len(counts["candidate"]) == 1 + len(doc["steps"])  # the bad end's and the steps'


def test_a_step_adds_the_rounds_it_needs_and_keeps_them(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    """3 rounds cannot give a paired p < 0.05 (2 / 2^3): the ends and the step are undecided
    at 3 and take 3 more, which the steps/ files keep."""
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK, SLOW, SLOW])
    doc = bisect(repo, hashes[0], hashes[-1], harness_env, "--rounds", "3", "--max-rounds", "6")
    assert doc["first_bad"] == hashes[1], doc["stderr"]
    assert doc["range"]["rounds"] == 6 and [s["rounds"] for s in doc["steps"]] == [6]
    files = sorted((Path(doc["folder"]) / "steps").glob("*.json"))
    assert [json.loads(f.read_text())["rounds"] for f in files] == [6, 6]


def test_a_flat_range_has_no_regression(tmp_path: Path, harness_env: dict[str, str]) -> None:
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK] * 4)
    doc = bisect(repo, hashes[0], hashes[-1], harness_env)
    assert doc["status"] == "no-regression", doc["stderr"]
    assert doc["first_bad"] is None and doc["steps"] == []
    assert "no regression in this range" in doc["stderr"]


def test_a_commit_that_does_not_build_is_skipped(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    repo = tmp_path / "repo"
    # 8 commits after the good end: the first step tries the 4th (hashes[4]), which is broken.
    hashes = make_repo(repo, [BASE_WORK] * 6 + [SLOW] * 3, broken={4})
    doc = bisect(repo, hashes[0], hashes[-1], harness_env)
    assert doc["first_bad"] == hashes[6], doc["stderr"]
    skipped = [s for s in doc["steps"] if s["verdict"] == "skip"]
    assert [s["commit"] for s in skipped] == [hashes[4]]
    assert f"{hashes[4][:12]} skipped: its build exited with code 1" in doc["stderr"]


def test_run_two_revisions_prints_b_against_a(tmp_path: Path, harness_env: dict[str, str]) -> None:
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK, SLOW])
    before = state(repo)
    done = run_harness(
        ["run", str(repo / "bench"), "--rev", hashes[0], "--rev", "main", "--repeat", "6",
         "--duration-s", "0.1", "--warmup-s", "0", "--strategies", "spin"],
        harness_env,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("spin "))
    assert "p=0.031" in row and row.endswith("B worse"), done.stdout
    assert f"A {hashes[0][:12]}" in done.stdout and f"B {hashes[1][:12]}" in done.stdout
    assert state(repo) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--good", "nope", "--bad", "main"], "--good 'nope': git does not know this revision"),
        (["--good", "main", "--bad", "main~2"], "is not an ancestor of --bad"),
        (["--good", "main~2", "--bad", "main", "--strategies", "spin,twirl"], "names 2 strategies"),
        (["--good", "main~2", "--bad", "main", "--param", "a=1", "--param", "a=2"], "has 2 values"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_build(
    tmp_path: Path, harness_env: dict[str, str], args: list[str], message: str
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, [BASE_WORK] * 3)
    done = run_harness(["bisect", str(repo / "bench"), *args], harness_env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (Path(harness_env["HARNESS_RESULTS"]) / "bisect").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rev", "main"], "--rev: give two revisions"),
        (["--rev", "nope", "--rev", "main"], "--rev 'nope': git does not know this revision"),
        (["--rev", "main~1", "--rev", "main", "--probes", "sched"], "--probes does not go with"),
    ],
)
def test_run_rev_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, harness_env: dict[str, str], args: list[str], message: str
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, [BASE_WORK] * 2)
    done = run_harness(["run", str(repo / "bench"), *args], harness_env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (Path(harness_env["HARNESS_RESULTS"]) / "revs").exists()


def test_a_target_outside_git_is_bad_input(tmp_path: Path, harness_env: dict[str, str]) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, [BASE_WORK] * 2)
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("chew.py", "suite.toml", "work.txt"):
        (outside / name).write_text((repo / "bench" / name).read_text())
    done = run_harness(["bisect", str(outside), "--good", "a", "--bad", "b"], harness_env)
    assert done.returncode == 2
    assert "is not inside a git repository" in done.stderr and done.stderr.count("\n") == 1


def _interrupted(
    tmp_path: Path, env: dict[str, str], sig: signal.Signals
) -> tuple[Path, int, tuple]:
    """A bisection started with its first repeat held, `sig` sent to the harness once that
    repeat runs; the repository, the harness's exit code and the state before."""
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK] * 3 + [SLOW] * 2)
    dirty(repo)
    before = state(repo)
    mark = tmp_path / "mark"
    held = {**env, "CHEW_MARK": str(mark), "CHEW_HOLD_S": "60"}
    proc = subprocess.Popen(
        [
            *HARNESS,
            "bisect",
            str(repo / "bench"),
            "--good",
            hashes[0],
            "--bad",
            hashes[-1],
            *QUICK,
            *NO_WHY,
        ],
        env=held,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    end = time.monotonic() + 60
    while not (mark.exists() and mark.read_text().strip()) and time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    assert mark.exists()
    assert len(state(repo)[3]) == 3  # the user's and two worktrees: the ends'
    proc.send_signal(sig)
    code = proc.wait(timeout=60)
    if sig == signal.SIGKILL:  # the held repeat is in a session of its own: it lives on
        for pid in mark.read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    return repo, code, before


def test_sigint_leaves_the_repository_as_it_was(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    repo, code, before = _interrupted(tmp_path, harness_env, signal.SIGINT)
    assert code == 130
    assert state(repo) == before
    (folder,) = (Path(harness_env["HARNESS_RESULTS"]) / "bisect").iterdir()
    assert not (folder / "worktrees").exists()
    assert json.loads((folder / "bisect.json").read_text())["status"] == "interrupted"


def test_sigkill_leaves_the_repository_and_the_next_run_reclaims_the_worktrees(
    tmp_path: Path, harness_env: dict[str, str]
) -> None:
    repo, code, before = _interrupted(tmp_path, harness_env, signal.SIGKILL)
    assert code == -signal.SIGKILL
    head, index, status, worktrees = state(repo)
    assert (head, index, status) == before[:3]
    assert len(worktrees) == 3  # left behind, until:
    (killed,) = (Path(harness_env["HARNESS_RESULTS"]) / "bisect").iterdir()
    done = run_harness(
        ["bisect", str(repo / "bench"), "--good", "main~1", "--bad", "main", *QUICK, *NO_WHY],
        harness_env,
    )
    assert done.returncode == 0, done.stderr
    assert f"reclaimed the worktrees of an abandoned bisection: {killed}" in done.stderr
    assert state(repo) == before
    assert not (killed / "worktrees").exists() and not (killed / "cache").exists()


def _search(verdicts: dict[str, str], n: int) -> tuple[search.Outcome, list[str]]:
    commits = [f"c{i}" for i in range(n)]
    asked: list[str] = []

    def judge(commit: str, step: int, about: int) -> str:
        asked.append(commit)
        return verdicts.get(commit) or ("bad" if int(commit[1:]) >= 5 else "good")

    return search.search(commits, judge), asked


def test_search_finds_the_first_bad_skips_and_stops_undecided() -> None:
    outcome, asked = _search({}, 8)
    assert (outcome.status, outcome.last_good, outcome.first_bad) == ("found", 4, 5)
    assert asked == ["c3", "c5", "c4"]
    outcome, asked = _search({"c3": "skip"}, 8)
    assert outcome.first_bad == 5 and asked[:2] == ["c3", "c2"]
    outcome, _ = _search({"c3": "undecided"}, 8)
    assert (outcome.status, outcome.last_good, outcome.first_bad) == ("undecided", -1, 7)
    outcome, _ = _search({f"c{i}": "skip" for i in range(7)}, 8)
    assert outcome.status == "untestable"


def test_verdicts_in_the_metrics_direction() -> None:
    slower = {"ci95_low": 0.08, "ci95_high": 0.12, "ratio": 0.1, "significant": True}
    same = {"ci95_low": 0.95, "ci95_high": 1.04, "ratio": 1.0, "significant": False}
    assert search.range_verdict(slower, "higher") == "bad"
    assert search.range_verdict(slower, "lower") == "good"
    assert search.range_verdict(same, "higher") == "undecided"
    effect = search.worse(0.1, "higher")
    assert search.step_verdict(slower, "higher", effect) == "bad"
    assert search.step_verdict(same, "higher", effect) == "good"
    # Worse than the good end, and its interval reaches past half the range's effect.
    between = {"ci95_low": 0.2, "ci95_high": 0.9, "ratio": 0.4, "significant": True}
    assert search.step_verdict(between, "higher", effect) == "bad"
    # Across both 1 and half the effect: too wide to say.
    wide = {"ci95_low": 0.2, "ci95_high": 1.1, "ratio": 0.4, "significant": False}
    assert search.step_verdict(wide, "higher", effect) == "undecided"
    # The timers demo: the range's 0.75x, the commit's 0.88x [0.82-0.98] over 18 rounds.
    timers = {"ci95_low": 0.82, "ci95_high": 0.98, "ratio": 0.88, "significant": True}
    assert search.step_verdict(timers, "higher", search.worse(0.75, "higher")) == "bad"


def test_rounds_needed_follows_the_spread_and_the_distance_to_decide() -> None:
    # Log ratios of spread sigma about a centre: the rounds at which the median's 95%
    # interval (1.96 x 1.2533 sigma / sqrt(n) each side) fits between the centre and its goal.
    def ratios(centre: float, sigma: float, n: int = 12) -> list[float]:
        offsets = [(i - (n - 1) / 2) for i in range(n)]
        scale = sigma / float(np.std(offsets, ddof=1))
        return [math.exp(-(centre + scale * o)) for o in offsets]  # "higher" is better

    effect = 0.10  # the range: 0.905x
    # A step at 0.95x (its centre on half the effect) has no nearer goal than 1 itself.
    at_half = search.rounds_needed(ratios(0.05, 0.1), "higher", effect)
    assert at_half == math.ceil((search.HALF_WIDTH * 0.1 / 0.05) ** 2) == 25
    # Twice the spread needs four times the rounds.
    assert search.rounds_needed(ratios(0.05, 0.2), "higher", effect) == 97
    # Never fewer than the rounds it has; a quiet step is decided by then.
    assert search.rounds_needed(ratios(0.0, 0.001), "higher", effect) == 12
    # The range needs its interval off 1: a centre on 1 is never decided.
    assert (search.rounds_needed(ratios(0.0, 0.05), "higher", None) or 10**9) >= 10**9
    assert search.rounds_needed(ratios(0.02, 0.05), "higher", None) == math.ceil(
        (search.HALF_WIDTH * 0.05 / 0.02) ** 2
    )
    assert search.rounds_needed([0.9, 1.1], "higher", effect) is None  # too few rounds
    # "lower is better" counts the other way: the same spread, the same count.
    flipped = [1 / r for r in ratios(0.05, 0.1)]
    assert search.rounds_needed(flipped, "lower", effect) == 25
