"""`harness history bisect EVENT` and the dashboard's bisect commands: the commit range of an
event's regressed series (the run before the change and the event's run), the command over
it, its result kept with the event and shown; and the events it cannot bisect, said in one
line."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import time
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bisectrepo import BASE_WORK, git, make_repo
from conftest import HARNESS, run_harness
from historyruns import harness, write_night
from rundocs import cell, config, run
from sqlalchemy import func, select

from harness.cli import build_parser
from harness.history import bisections
from harness.history.bisect_ranges import SeriesRange, event_ranges
from harness.history.db import connect, writing
from harness.history.schema import event_bisections, events, series

QUICK = ["--rounds", "6", "--max-rounds", "12", "--duration-s", "0.1", "--warmup-s", "0"]
NO_WHY = ["--explain-repeats", "0"]
SLOW = BASE_WORK * 10


def bisect_args(command: str) -> Any:
    """The command line as `harness` parses it."""
    argv = shlex.split(command)
    assert argv[:2] == ["harness", "bisect"]
    return build_parser("bisect").parse_args(argv[1:])


def commands_in(html_file: Path) -> list[str]:
    """The copyable commands of a dashboard page, as text."""
    return [
        unescape(c)
        for c in re.findall(r"<code class='command'>(.*?)</code>", html_file.read_text())
    ]


def sourced_nights(
    root: Path, folder: Path, commits: list[str], levels: list[dict[tuple[str, int], float]]
) -> list[Path]:
    """Nightly runs of suite timers whose suite_source is `folder` at `commits[night]`."""
    rng = np.random.default_rng(3)
    dirs = []
    for night, (commit, level) in enumerate(zip(commits, levels, strict=True)):
        run_dir = write_night(root, night, level, rng)
        doc = json.loads((run_dir / "run.json").read_text())
        doc["suite_source"] = {"folder": str(folder), "commit": commit, "dirty": False}
        (run_dir / "run.json").write_text(json.dumps(doc))
        dirs.append(run_dir)
    return dirs


def chew_nights(root: Path, folder: Path, commits: list[str], levels: list[float]) -> list[Path]:
    """Nightly runs of tests/bisectrepo.py's chew suite (its cell spin, steady, no parameter)
    whose suite_source is `folder` at `commits[night]`: 5 repeats of ops_per_sec at the
    night's level, 1% noise."""
    rng = np.random.default_rng(4)
    dirs = []
    for night, (commit, level) in enumerate(zip(commits, levels, strict=True)):
        repeats = [{"ops_per_sec": level * (1 + 0.01 * rng.standard_normal())} for _ in range(5)]
        run_id = f"202501{night + 1:02d}T000000Z-abc1234"
        doc = run(
            [cell("spin", "steady", {}, repeats)],
            run_id=run_id,
            suite="chew",
            started_at=f"2025-01-{night + 1:02d}T00:00:00Z",
            finished_at=f"2025-01-{night + 1:02d}T00:10:00Z",
            config=config(strategies=["spin"], params={}),
            suite_source={"folder": str(folder), "commit": commit, "dirty": False},
        )
        (root / run_id).mkdir(parents=True)
        (root / run_id / "run.json").write_text(json.dumps(doc))
        dirs.append(root / run_id)
    return dirs


def imported(url: str, dirs: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = harness(["history", "import", "--db", url, *map(str, dirs)], capsys)
    assert code == 0, (out, err)


def kept_rows(url: str) -> int:
    with connect(url).connect() as conn:
        return int(conn.execute(select(func.count()).select_from(event_bisections)).scalar_one())


@pytest.mark.unit
def test_each_regressed_series_of_an_event_shows_its_range_and_command(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Two series fall at night 4, by 40% and by 20%: the event's row offers the 40% one's
    command, each series page its own; the good end is night 3's commit, the bad night 4's."""
    folder = tmp_path / "app" / "bench"
    commits = [f"{n:x}" * 40 for n in range(1, 7)]
    flat = {("none", 64): 1000.0, ("tokio", 64): 1000.0}
    fallen = {("none", 64): 600.0, ("tokio", 64): 800.0}
    dirs = sourced_nights(tmp_path / "runs", folder, commits, [flat] * 4 + [fallen] * 2)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    code, out, _ = harness(["history", "regressions", "--json", "--db", url], capsys)
    found = json.loads(out)
    assert code == 1 and {r["run_id"] for r in found} == {dirs[4].name}
    (event,) = {r["event"] for r in found}
    series_of = {r["strategy"]: r["series_id"] for r in found}

    site = tmp_path / "site"
    code, _, err = harness(["dashboard", "--db", url, "--out", str(site)], capsys)
    assert code == 0, err
    row = commands_in(site / "index.html")
    # The commits the row names are the suite's (suite_source), not the harness's.
    assert f"{commits[3][:10]}..{commits[4][:10]}" in (site / "index.html").read_text()
    assert row[1] == f"harness history bisect {event}"
    largest = bisect_args(row[0])
    assert (largest.suite, largest.good, largest.bad) == (str(folder), commits[3], commits[4])
    assert largest.strategies == ["none"] and largest.scenario == ["steady"]
    assert largest.param == ["concurrency=64"] and largest.metric == "ops_per_sec"
    other = commands_in(site / "series" / f"{series_of['tokio']}.html")
    assert bisect_args(other[0]).strategies == ["tokio"]
    assert other[1] == f"harness history bisect {event} --series {series_of['tokio']}"
    assert commands_in(site / "series" / f"{series_of['none']}.html")[0] == row[0]


def test_history_bisect_finds_the_commit_and_the_dashboard_shows_it(
    db_url: str, tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Real runs of an external workload at four commits of its repository, the regressing
    commit between the second and the third: `harness history bisect` runs the event's
    command, which finds it, keeps the result, and the dashboard shows it."""
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK] * 4 + [SLOW] * 3)
    git(repo, "config", "core.fileMode", "false")  # the run needs chew.py executable
    (repo / "bench" / "chew.py").chmod(0o755)
    for commit in (hashes[0], hashes[1], hashes[5], hashes[6]):
        git(repo, "checkout", "-q", commit)
        done = run_harness(
            ["run", str(repo / "bench"), "--strategies", "spin", "--repeat", "5",
             "--duration-s", "0.1", "--warmup-s", "0"],
            harness_env,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    runs = sorted((Path(harness_env["HARNESS_RESULTS"]) / "runs").iterdir())
    source = json.loads((runs[2] / "run.json").read_text())["suite_source"]
    assert source == {"folder": str(repo / "bench"), "commit": hashes[5], "dirty": False}
    url = db_url
    imported(url, runs, capsys)
    code, out, _ = harness(["history", "regressions", "--json", "--db", url], capsys)
    # The step at the third run; on a busy machine a later run may move past its floor too.
    found = [r for r in json.loads(out) if r["run_id"] == runs[2].name]
    assert code == 1 and found, out
    (event,) = {r["event"] for r in found}
    # CPU per op, which other work on the machine moves less than ops/s.
    (cpu,) = (r["series_id"] for r in found if r["metric"] == "cpu_ns_per_op")

    argv = ["history", "bisect", str(event), "--series", str(cpu), "--db", url, *QUICK, *NO_WHY]
    code, out, err = harness(argv, capsys)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(
        f"$ harness bisect {repo / 'bench'} --good {hashes[1]} --bad {hashes[5]} "
        "--strategies spin --scenario steady --metric cpu_ns_per_op "
    )
    assert "--rounds 6" in first and "--explain-repeats 0" in first
    assert f"first bad commit {hashes[4][:12]} chew: {SLOW} iterations an op" in out, err
    assert "step 1 of ~2" in err
    assert kept_rows(url) == 1

    site = tmp_path / "site"
    code, _, err = harness(["dashboard", "--db", url, "--out", str(site)], capsys)
    assert code == 0, err
    index = unescape((site / "index.html").read_text())
    assert f"first bad commit <code>{hashes[4][:12]}</code> chew: {SLOW} iterations an op" in index
    times, dash = "\N{MULTIPLICATION SIGN}", "\N{EN DASH}"
    effect = (
        rf"class='effect'>[\d.]+{times} \[[\d.]+{times}{dash}[\d.]+{times}\] p=(0\.0\d+|<0\.001)"
    )
    assert re.search(effect, index), index
    bisect_json = re.search(r"<a href='([^']+/bisect.json)'>", index)
    assert bisect_json is not None
    assert json.loads((site / bisect_json[1]).read_text())["first_bad"] == hashes[4]
    bisected = re.search(rf"^event {event}, series (\d+): ", out, re.MULTILINE)
    assert bisected is not None, out
    series_page = unescape((site / "series" / f"{bisected[1]}.html").read_text())
    assert f"first bad commit <code>{hashes[4][:12]}</code>" in series_page
    # The other regressed series of the event (the other metric) still offers its command.
    for other in (r for r in found if r["series_id"] != int(bisected[1])):
        page = (site / "series" / f"{other['series_id']}.html").read_text()
        assert "<code class='command'>harness bisect" in page


@pytest.mark.unit
def test_an_unknown_event_is_one_line(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [write_night(tmp_path / "runs", n, {("none", 64): 1000.0}, np.random.default_rng(n))
            for n in range(2)]  # fmt: skip
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    code, out, err = harness(["history", "bisect", "7", "--db", url], capsys)
    assert code == 2 and out == ""
    assert err == "harness: error: no event 7 (harness history regressions lists them)\n"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("older", "does not record its suite's folder (a run.json of an older harness)"),
        ("dirty", "measured a dirty working tree: its commit"),
        ("same", "measured the same commit"),
        ("nogit", "has no commit: its suite was not in a git working tree"),
    ],
)
def test_an_event_without_a_commit_range_says_why(
    tmp_path: Path,
    harness_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    change: str,
    reason: str,
) -> None:
    """Runs of an older harness (no suite_source, and no suite of this repository so named),
    a dirty tree at the event's run, the same commit on both sides, no git: no command on the
    dashboard, and `history bisect` says why in one line, keeping nothing."""
    folder = tmp_path / "app" / "bench"
    commits = [f"{n:x}" * 40 for n in range(1, 7)]
    flat, fallen = {("none", 64): 1000.0}, {("none", 64): 600.0}
    dirs = sourced_nights(tmp_path / "runs", folder, commits, [flat] * 4 + [fallen] * 2)
    doc = json.loads((dirs[4] / "run.json").read_text())
    if change == "older":
        del doc["suite_source"]
    elif change == "dirty":
        doc["suite_source"]["dirty"] = True
    elif change == "same":
        doc["suite_source"]["commit"] = commits[3]
    else:
        doc["suite_source"] |= {"commit": None, "dirty": None}
    (dirs[4] / "run.json").write_text(json.dumps(doc))
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    code, out, _ = harness(["history", "regressions", "--json", "--db", url], capsys)
    (regression,) = json.loads(out)
    code, out, err = harness(["history", "bisect", str(regression["event"]), "--db", url], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"event {regression['event']}, series {regression['series_id']}: no commit range" in err
    assert reason in err
    assert kept_rows(url) == 0
    site = tmp_path / "site"
    harness(["dashboard", "--db", url, "--out", str(site)], capsys)
    index = unescape((site / "index.html").read_text())
    assert "class='command'" not in index
    shown = re.search(r"no bisect command: ([^<]*)<", index)
    assert shown is not None and reason in shown[1] and dirs[4].name in shown[1], index


@pytest.mark.unit
def test_a_bisection_that_fails_keeps_nothing(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The good end's commit does not build: the bisection fails with its one line, and the
    history keeps no result for the event."""
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK] * 4 + [SLOW] * 3, broken={3})
    commits = [hashes[0], hashes[1], hashes[2], hashes[3], hashes[5], hashes[6]]
    dirs = chew_nights(tmp_path / "runs", repo / "bench", commits, [1000.0] * 4 + [600.0] * 2)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    code, out, _ = harness(["history", "regressions", "--json", "--db", url], capsys)
    (regression,) = json.loads(out)
    code, out, err = harness(
        ["history", "bisect", str(regression["event"]), "--db", url, *QUICK, *NO_WHY], capsys
    )
    assert code == 1, err
    assert out.startswith(f"$ harness bisect {repo / 'bench'} --good {hashes[3]} --bad {hashes[5]}")
    assert f"harness: error: the good end {hashes[3][:12]} does not build" in err
    assert kept_rows(url) == 0


@pytest.mark.unit
def test_an_interrupted_bisection_keeps_nothing(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while the bisection's first repeat runs: exit 130, bisect.json says interrupted,
    and the history keeps no result for the event."""
    repo = tmp_path / "repo"
    hashes = make_repo(repo, [BASE_WORK] * 4 + [SLOW] * 3)
    commits = [hashes[0], hashes[1], hashes[2], hashes[3], hashes[5], hashes[6]]
    dirs = chew_nights(tmp_path / "runs", repo / "bench", commits, [1000.0] * 4 + [600.0] * 2)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    code, out, _ = harness(["history", "regressions", "--json", "--db", url], capsys)
    assert code == 1
    (regression,) = json.loads(out)
    mark = tmp_path / "mark"
    held = {**harness_env, "CHEW_MARK": str(mark), "CHEW_HOLD_S": "60"}
    argv = ["history", "bisect", str(regression["event"]), "--db", url, *QUICK, *NO_WHY]
    proc = subprocess.Popen(
        [*HARNESS, *argv], env=held, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    end = time.monotonic() + 120
    while not (mark.exists() and mark.read_text().strip()) and time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)  # the held repeat writes its pid, then sleeps: polled, not raced
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert out.startswith("$ harness bisect ") and "first bad commit" not in out
    (folder,) = (Path(harness_env["HARNESS_RESULTS"]) / "bisect").iterdir()
    assert json.loads((folder / "bisect.json").read_text())["status"] == "interrupted"
    assert kept_rows(url) == 0


def kept(url: str, doc: dict[str, Any]) -> tuple[int, SeriesRange]:
    """The result `doc` (as bisect.json has it) kept for the only event's largest regression."""
    engine = connect(url)
    with engine.connect() as conn:
        (event,) = conn.execute(select(events.c.id)).scalars()
        found = event_ranges(conn, event)[0]
    assert found.command is not None and found.good is not None and found.bad is not None
    with writing(engine) as conn:
        bisections.store(
            conn, found.run_pk, found.series_id, (found.good, found.bad), found.command, doc
        )
    return event, found


@pytest.mark.unit
def test_a_kept_result_links_its_differential_flame_graph_and_bisect_json(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bisection explained keeps the finding and the graph's path: the event's row and the
    series page say the finding and link the graph and bisect.json where they are."""
    commits = [f"{n:x}" * 40 for n in range(1, 7)]
    flat, fallen = {("none", 64): 1000.0}, {("none", 64): 600.0}
    dirs = sourced_nights(
        tmp_path / "runs", tmp_path / "app" / "bench", commits, [flat] * 4 + [fallen] * 2
    )
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    folder = Path(harness_env["HARNESS_RESULTS"]) / "bisect" / "20250105-000000"
    graph = folder / "why" / "run-b" / "compare" / "run-a" / "none.diff.svg"
    graph.parent.mkdir(parents=True)
    graph.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>')
    (folder / "bisect.json").write_text("{}")
    finding = "CPU per op 1.7x (95% CI 1.6-1.8): 1.7µs vs 1.0µs"
    doc = {
        "status": "found",
        "first_bad": "c" * 40,
        "first_bad_subject": "timers: <checksum> the key",
        "last_good": "b" * 40,
        "effect": {"ratio": 0.6, "low": 0.55, "high": 0.66, "p": 0.031},
        "finding": finding,
        "diff_flamegraph": str(graph),
        "folder": str(folder),
    }
    event, found = kept(url, doc)
    site = tmp_path / "site"
    code, _, err = harness(["dashboard", "--db", url, "--out", str(site)], capsys)
    assert code == 0, err
    for page in (site / "index.html", site / "series" / f"{found.series_id}.html"):
        html = page.read_text()
        assert "first bad commit <code>cccccccccccc</code> timers: &lt;checksum&gt; the key" in html
        assert f"against <code>{commits[3][:12]}</code>" in html and finding in unescape(html)
        links = dict(
            (text, href)
            for href, text in re.findall(
                r"<a href='([^']+)'>(differential flame graph|bisect.json)</a>", html
            )
        )
        assert (page.parent / links["differential flame graph"]).resolve() == graph.resolve()
        assert (page.parent / links["bisect.json"]).resolve() == (folder / "bisect.json").resolve()
    assert f"harness history bisect {event}" not in (site / "index.html").read_text()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("doc", "said"),
    [
        (
            {"status": "no-regression"},
            "no regression between 444444444444 and 555555555555: the bad end measured not worse "
            "than the good one",
        ),
        (
            {
                "status": "undecided",
                "last_good": "5" * 40,
                "undecided_between": ["5" * 40, "6" * 40],
            },
            "undecided between 555555555555 and 666666666666: a step stayed undecided after its "
            "rounds",
        ),
        (
            {
                "status": "untestable",
                "last_good": "5" * 40,
                "undecided_between": ["5" * 40, "6" * 40],
            },
            "untestable between 555555555555 and 666666666666: the commits between do not build",
        ),
    ],
)
def test_a_bisection_without_a_culprit_says_where_it_ended(
    tmp_path: Path,
    harness_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    doc: dict[str, Any],
    said: str,
) -> None:
    commits = [f"{n:x}" * 40 for n in range(1, 7)]
    flat, fallen = {("none", 64): 1000.0}, {("none", 64): 600.0}
    dirs = sourced_nights(
        tmp_path / "runs", tmp_path / "app" / "bench", commits, [flat] * 4 + [fallen] * 2
    )
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    kept(url, doc | {"folder": str(tmp_path / "bisect")})
    with connect(url).connect() as conn:
        (result,) = bisections.stored(conn).values()
    assert result.summary() == said and result.verdict == doc["status"]
    site = tmp_path / "site"
    harness(["dashboard", "--db", url, "--out", str(site)], capsys)
    assert said in unescape((site / "index.html").read_text())


@pytest.mark.unit
def test_a_series_not_regressed_in_the_event_or_an_event_without_regression_is_one_line(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """--series naming a series the event did not regress, and an event of improvements only:
    one line each, exit 2, nothing run."""
    folder = tmp_path / "app" / "bench"
    commits = [f"{n:x}" * 40 for n in range(1, 7)]
    flat = {("none", 64): 1000.0, ("tokio", 64): 1000.0}
    moved = {("none", 64): 600.0, ("tokio", 64): 1000.0}
    faster = {("none", 64): 1400.0, ("tokio", 64): 1000.0}
    dirs = sourced_nights(tmp_path / "runs", folder, commits, [flat] * 4 + [moved] * 2)
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    code, out, _ = harness(["history", "regressions", "--json", "--db", url], capsys)
    (regression,) = json.loads(out)
    with connect(url).connect() as conn:
        series_ids = set(conn.execute(select(series.c.id)).scalars())
    (steady,) = series_ids - {regression["series_id"]}
    argv = ["history", "bisect", str(regression["event"]), "--series", str(steady), "--db", url]
    code, out, err = harness(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"--series {steady}: not a regressed series of event {regression['event']}" in err
    assert f"(those are: {regression['series_id']})" in err

    up = sourced_nights(tmp_path / "up", folder, commits, [flat] * 4 + [faster] * 2)
    url = f"sqlite:///{tmp_path / 'up.sqlite'}"
    imported(url, up, capsys)
    with connect(url).connect() as conn:
        (event,) = conn.execute(select(events.c.id)).scalars()
    code, out, err = harness(["history", "bisect", str(event), "--db", url], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"event {event} has no regression to bisect" in err
    assert not (Path(harness_env["HARNESS_RESULTS"]) / "bisect").exists()


@pytest.mark.unit
def test_runs_of_an_older_harness_of_a_suite_of_this_repository_bisect_the_harness_commits(
    tmp_path: Path, harness_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without suite_source, a suite of this repository (the workloads folder's sleepy) was
    measured at the harness's commit: the command names the suite and those commits."""
    commits = [f"{n:x}" * 40 for n in range(1, 7)]
    flat, fallen = {("none", 64): 1000.0}, {("none", 64): 600.0}
    dirs = sourced_nights(tmp_path / "runs", tmp_path / "x", commits, [flat] * 4 + [fallen] * 2)
    for folder, commit in zip(dirs, reversed(commits), strict=True):
        doc = json.loads((folder / "run.json").read_text())
        del doc["suite_source"]
        doc |= {"suite": "sleepy", "git": {"commit": commit, "dirty": False}}
        (folder / "run.json").write_text(json.dumps(doc))
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    imported(url, dirs, capsys)
    site = tmp_path / "site"
    code, _, err = harness(["dashboard", "--db", url, "--out", str(site)], capsys)
    assert code == 0, err
    args = bisect_args(commands_in(site / "index.html")[0])
    assert (args.suite, args.good, args.bad) == ("sleepy", commits[2], commits[1])
