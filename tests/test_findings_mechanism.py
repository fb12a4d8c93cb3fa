"""The findings that name the mechanism (harness/report/mechanism.py), pinned on run
directories recorded on the 2-core VM and trimmed to what the rules read
(tests/fixtures/findings/README.md says which command made each)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.format.numbers import DASH, TIMES
from harness.report import data, mechanism
from harness.rundoc.jsonfile import load_run
from harness.rundoc.model import RunDoc

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures" / "findings"
WHY = "why event-executor is slower than none: "


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / name / "run.json").read_text())
    return doc


def texts(doc: dict[str, Any], name: str) -> list[str]:
    return findings_of(doc, FIXTURES / name)


def findings_of(doc: dict[str, Any], run_dir: Path) -> list[str]:
    facts = data.Facts(RunDoc.model_validate(doc), run_dir)
    return [data.finding_text(f) for f in data.findings(facts)]


def cell(doc: dict[str, Any], strategy: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in doc["cells"] if c["strategy"] == strategy)
    return found


def contrast(doc: dict[str, Any], run_dir: Path, slow: str, fast: str) -> mechanism.Contrast:
    """`slow` against `fast` in the (possibly edited) document."""
    facts = data.Facts(RunDoc.model_validate(doc), run_dir)
    cells = {c.strategy: c for c in facts.cells}
    return mechanism.Contrast(facts, cells[slow], cells[fast])


@pytest.mark.parametrize("name", ["timers", "pools-ballast", "lettuce"])
def test_the_recorded_runs_load_through_the_one_loader(name: str) -> None:
    run = load_run(FIXTURES / name)
    assert run.model_dump(mode="json") == load(name)


def test_timers_first_findings_name_the_event_executor_wake_ups() -> None:
    said = texts(load("timers"), "timers")
    assert said[0].startswith(WHY + "the client's threads are woken 0.0763 times per op vs 0.00774")
    assert "timers-client threads waking event-exec-N threads, 0.022 per op vs 0" in said[0]
    assert said[1].startswith(WHY + "the client's CPU per op is 3.72µs vs 542.9ns")
    assert "timer_engines::event_executor::scheduled_heap::ScheduledHeap<T>::remove_at" in said[1]
    assert said[2].startswith(WHY + "it waits 7.30µs per op in futex waits vs 3.07µs")
    assert "timer_engines::task_queue::TaskQueue<E>::wait" in said[2]
    # The plain ratio findings follow the mechanism.
    assert said[3].startswith("event-executor: 0.47")


def test_no_mechanism_where_the_strategies_are_not_apart() -> None:
    """tokio-timeout's ops/s interval against none (0.83-1.15) contains 1: nothing is said."""
    said = texts(load("timers"), "timers")
    assert said[0].startswith(WHY)  # the rules ran on this run
    assert not any(s.startswith("why tokio-timeout") or "than tokio-timeout" in s for s in said)


def test_silent_when_the_headline_comparison_is_not_supported() -> None:
    doc = load("timers")
    assert texts(doc, "timers")[0].startswith(WHY)
    for entry in doc["comparisons"]:
        if entry["candidate"] == "event-executor":
            entry["ci95_high"] = 1.02  # the ops/s interval now reaches 1
    assert not any(s.startswith("why ") for s in texts(doc, "timers"))


def test_wake_up_rule_silent_when_its_interval_reaches_one() -> None:
    """The same run with event-executor's wake-ups per op overlapping none's: no wake-up
    finding; the CPU and futex findings stay."""
    doc = load("timers")
    base = [r["wakeups_per_op"] for r in cell(doc, "none")["repeats"]]
    for r, value in zip(cell(doc, "event-executor")["repeats"], base, strict=True):
        r["wakeups_per_op"] = value * 1.01
    said = [s for s in texts(doc, "timers") if s.startswith("why ")]
    assert [s.split(": ")[1].split(" ")[:3] for s in said] == [
        ["the", "client's", "CPU"],
        ["it", "waits", "7.30µs"],
    ]


def test_pair_clause_needs_the_pairs_rates_apart(tmp_path: Path) -> None:
    """Wake-ups per op apart, but in one explain repeat the top pair's wake-ups are as few as
    in the other cell: the finding stays, the pair is not named."""
    run = tmp_path / "timers"
    shutil.copytree(FIXTURES / "timers", run)
    doc = load("timers")
    slow = cell(doc, "event-executor")
    raw_path = run / slow["probes"]["offwake"]["repeats"][0]["path"]
    raw = json.loads(raw_path.read_text())
    raw["stacks"] = [s for s in raw["stacks"] if not s["folded"].startswith("event-exec")]
    raw_path.write_text(json.dumps(raw))
    lines = findings_of(doc, run)
    assert lines[0].startswith(WHY + "the client's threads are woken")
    assert "waking" not in lines[0]


def test_futex_rule_needs_enough_waits() -> None:
    doc = load("timers")
    slow = cell(doc, "event-executor")
    slow["probes"]["futex"]["totals"]["waits"] = mechanism.MIN_FUTEX_WAITS - 1
    c = contrast(doc, FIXTURES / "timers", "event-executor", "none")
    assert mechanism.futex_rule(c) is None


def test_terminal_lines_are_the_reports_first_findings() -> None:
    doc = load("timers")
    lines = mechanism.terminal_lines(RunDoc.model_validate(doc), FIXTURES / "timers")
    assert len(lines) == 3
    assert lines == texts(doc, "timers")[:3]


@pytest.mark.parametrize(
    ("comm", "group"),
    [
        ("event-exec-12", "event-exec-N"),
        ("timers-client", "timers-client"),
        ("G1 Conc#0", "G1 Conc#N"),
    ],
)
def test_thread_group(comm: str, group: str) -> None:
    assert mechanism.thread_group(comm) == group


def test_supported_needs_the_interval_apart_and_the_test_where_it_can_decide() -> None:
    three = {"n_baseline": 3, "n_candidate": 3, "significant": False}
    assert mechanism.supported({**three, "ci95_low": 1.2, "ci95_high": 2.0})
    assert not mechanism.supported({**three, "ci95_low": 0.9, "ci95_high": 2.0})
    six = {"n_baseline": 6, "n_candidate": 6, "significant": False}
    assert not mechanism.supported({**six, "ci95_low": 1.2, "ci95_high": 2.0})
    assert mechanism.supported({**six, "significant": True, "ci95_low": 1.2, "ci95_high": 2.0})


def pools_contrast(slow: str, fast: str, doc: dict[str, Any] | None = None) -> mechanism.Contrast:
    return contrast(doc or load("pools-ballast"), FIXTURES / "pools-ballast", slow, fast)


def test_gc_rule_names_gc_frequency_on_the_ballast_trace() -> None:
    said = data.finding_text(mechanism.gc_rule(pools_contrast("smart-lifo", "fifo-channel")) or [])
    assert said == (
        "why smart-lifo is slower than fifo-channel: the GC runs 435 cycles/s vs 64 "
        f"(6.80{TIMES}, 95% CI 4.76{DASH}7.64), GC pauses 8.8% of the time vs 13.5%"
    )
    # The other way round the cycles are fewer, and the pause share is what is apart.
    said = data.finding_text(mechanism.gc_rule(pools_contrast("fifo-channel", "smart-lifo")) or [])
    assert said.startswith(
        "why fifo-channel is slower than smart-lifo: GC pauses 13.5% of the time vs 8.8%"
    )


def test_gc_rule_needs_enough_cycles() -> None:
    doc = load("pools-ballast")
    for r in cell(doc, "smart-lifo")["repeats"]:
        r["gc_cycles"] = 1
    assert mechanism.gc_rule(pools_contrast("smart-lifo", "fifo-channel", doc)) is None


def test_pools_ballast_says_no_why_while_its_wait_interval_reaches_one() -> None:
    """wait avg smart-lifo / fifo-channel 0.41x [0.15-1.03]: neither is slower by the data,
    though each rule alone would speak."""
    said = texts(load("pools-ballast"), "pools-ballast")
    assert not any(s.startswith("why ") for s in said)
    assert mechanism.gc_rule(pools_contrast("smart-lifo", "fifo-channel")) is not None


def test_lettuce_names_the_executors_wake_ups() -> None:
    """The baseline is the slower one here: executor-expiry's event executor threads
    (`lettuce-eventExecutorLoop`, 15 characters in the kernel's comm) woken by the benchmark's
    threads."""
    said = texts(load("lettuce"), "lettuce")
    why = "why executor-expiry is slower than wheel-expiry: "
    assert said[0].startswith(why + "the client's threads are woken 2.25 times per op vs 0.96")
    assert "syncset-N threads waking lettuce-eventEx threads, 1.07 per op vs 0" in said[0]
    assert said[1].startswith(why + "it waits 12.1ms per op in futex waits vs 9.49ms")
    assert not said[2].startswith("why ")
