"""Git repositories for the bisection tests: an external contract-v1 workload in bench/, whose
commits change the work it does per operation.

The workload (`chew`) times a fixed count of operations (events, not wall-clock: its window
ends when they are done, whatever --duration-s says), each spinning `work` loop iterations
read from bench/work.txt. A commit that writes 10x the work into work.txt is a regression
no busy machine hides; a commit that creates bench/BROKEN does not build. Its build counts
itself in $CARGO_TARGET_DIR/builds, as a cargo target folder keeps what was built, and says
where it ran and its count in its log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

OPS = 200  # operations a repeat; at work=1000 about 10 ms of Python here
BASE_WORK = 1000

CHEW = f"""#!{sys.executable}
# A workload of the harness's contract (docs/workload-contract.md), version 1.
import json, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))

def say(**fields):
    print(json.dumps(fields), flush=True)

def main():
    if sys.argv[1:2] == ["describe"]:
        say(suite="chew", contract_version=1, baseline="spin",
            strategies=[{{"name": "spin", "help": "spins"}}, {{"name": "twirl", "help": "too"}}],
            default_scenario="steady",
            scenarios=[{{"name": "steady", "help": "one op after another", "params": {{}}}}],
            params=[],
            metrics=[{{"name": "ops_per_sec", "unit": "ops/s", "better": "higher",
                       "headline": True}},
                     {{"name": "cpu_ns_per_op", "unit": "ns", "better": "lower"}}])
        return
    if sys.argv[1:2] != ["run"]:
        sys.exit(2)
    args = sys.argv[2:]
    strategy = args[args.index("--strategy") + 1]
    with open(os.path.join(HERE, "work.txt")) as f:
        work = int(f.read())
    say(event="ready", pids=[os.getpid()])
    if "--gate" in args:
        sys.stdin.readline()
    if os.environ.get("CHEW_MARK"):  # the tests' interruptions: a repeat that holds
        with open(os.environ["CHEW_MARK"], "a") as f:
            f.write(f"{{os.getpid()}}\\n")
        time.sleep(float(os.environ.get("CHEW_HOLD_S", "0")))
    say(event="measure_start")
    started, cpu = time.perf_counter(), time.process_time()
    total = 0
    for _ in range({OPS}):
        for i in range(work):
            total += i
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    say(event="measure_end")
    say(event="result", strategy=strategy, scenario="steady", params={{}},
        ops={OPS}, ops_per_sec={OPS} / elapsed, cpu_ns_per_op=cpu * 1e9 / {OPS})

main()
"""

# Its build counts itself, as a cargo target folder keeps what was built (TOML's \" escapes).
COUNT = r"\"$CARGO_TARGET_DIR/builds\""
BUILD = (
    rf"test ! -e BROKEN && chmod +x chew.py && mkdir -p \"$CARGO_TARGET_DIR\" && pwd >> {COUNT}"
    rf" && echo \"built in $PWD: build $(wc -l < {COUNT})\""
)
SUITE = f"""name = "chew"
description = "Spins a fixed count of operations, each of work.txt loop iterations"
binary = "chew.py"
build = "{BUILD}"
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    """Write (None: delete) files under the repository, commit them, return the hash."""
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_repo(repo: Path, works: list[int], broken: set[int] = frozenset()) -> list[str]:
    """A repository whose commit 0 has the workload with works[0], and each next commit i
    either changes the work (works[i] != works[i-1]) or only a notes file; commits in `broken`
    do not build. Returns the hashes, oldest first."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "Bench Tester")
    git(repo, "config", "commit.gpgsign", "false")
    hashes = [
        commit(
            repo,
            "chew: the workload",
            {
                "bench/chew.py": CHEW,
                "bench/suite.toml": SUITE,
                "bench/work.txt": f"{works[0]}\n",
                "notes.txt": "0\n",
            },
        )
    ]
    for i in range(1, len(works)):
        files: dict[str, str | None] = {"notes.txt": f"{i}\n"}
        subject = f"notes: {i}"
        if works[i] != works[i - 1]:
            files["bench/work.txt"] = f"{works[i]}\n"
            subject = f"chew: {works[i]} iterations an op"
        if i in broken:
            files["bench/BROKEN"] = "x\n"
            subject += " (does not build)"
        elif (repo / "bench/BROKEN").exists():
            files["bench/BROKEN"] = None
        hashes.append(commit(repo, subject, files))
    return hashes
