"""A synthetic run directory for the report tests: run.json with probes and profiles laid out
like a real run (`folded/`, `flame/`, `probes/`), the flame graphs made by a given function.

Cells (timers suite, scenario steady, concurrency=256, baseline `none`):
- `none`: baseline, every graph but the differential one, sched and futex probes;
- `tokio-timeout`: every graph, a differential one, lock frames that grew;
- `deadline-tracker`: only the on-CPU graph; notes say why the others are missing;
- EVIL: a name full of HTML, a failed repeat, no profile, a probe unavailable, a raw probe
  file whose path needs URL quoting.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from timerscells import timers_metrics

from harness.base.writes import dumps
from harness.stats import compare_cells, summarize_cell

EVIL = 'evil<script>alert("x")</script>&amp;'
MUTEX_FRAME = "tokio::sync::Mutex<T>::lock"
SPREAD = (1.0, 0.99, 1.01, 0.98, 1.02)  # the median lands exactly on the given value
METRICS = timers_metrics("ops_per_sec", "latency_ns.p50", "latency_ns.p99", "timeouts", "errors")
# Folded on-CPU stacks: the client spends `lock` samples in the mutex, the server the rest.
BASE_STACKS = {
    "client;main;tokio::runtime::worker::run;send_request;write_frame": 400,
    f"client;main;tokio::runtime::worker::run;send_request;{MUTEX_FRAME}": 20,
    "client;main;tokio::runtime::worker::run;read_frame;recv": 300,
    "server;main;serve;handle": 500,
}

MakeSvg = Callable[[Path, Path], None]  # (folded input, svg output)
MakeDiffSvg = Callable[[Path, Path, Path], None]  # (baseline folded, folded, svg output)


def stacks(lock: int) -> dict[str, int]:
    out = dict(BASE_STACKS)
    out[f"client;main;tokio::runtime::worker::run;send_request;{MUTEX_FRAME}"] = lock
    return out


def write_folded(path: Path, folded: dict[str, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{stack} {count}\n" for stack, count in folded.items()))


def repeats(
    strategy: str, ops: float, mutex_share: float | None, futex_ns: float
) -> list[dict[str, Any]]:
    out = []
    for f in SPREAD:
        result: dict[str, Any] = {
            "event": "result",
            "strategy": strategy,
            "scenario": "steady",
            "params": {"concurrency": 256},
            "ops_per_sec": ops * f,
            "latency_ns": {"p50": 50_000 * f, "p99": 900_000 * f},
            "timeouts": 0,
            "errors": 0,
            "ctx_switches_per_op": 0.02 * f,
            "wakeups_per_op": 0.004 * f,
            "futex_wait_ns_per_op": futex_ns * f,
            "offcpu_ns_per_op": 2000.0 * f,
            "runq_latency_ns": {"p50": 11_000.0 * f, "p99": 3_800_000.0 * f},
        }
        if mutex_share is not None:
            result["mutex_share"] = mutex_share * f
        out.append(result)
    return out


def probes(cell_dir: str, repeat_count: int = 5) -> dict[str, Any]:
    futex_repeats = []
    for r in range(1, repeat_count + 1):
        futex_repeats.append(
            {
                "repeat": r,
                "path": f"probes/{cell_dir}/r{r}-futex.json",
                "window_ns": 1_000_000_000,
                "lost_events": 0,
                "totals": {"waits": 100, "wait_ns": 5_000_000, "failed_waits": 1, "wake_calls": 90},
            }
        )
    return {
        "sched": {
            "repeats": [
                {"repeat": 1, "path": f"probes/{cell_dir}/r1-sched.json", "lost_events": 3}
            ],
            "paths": [f"probes/{cell_dir}/r1-sched.json"],
            "lost_events": 3,
            "totals": {
                "voluntary_switches": 4941,
                "involuntary_switches": 1131,
                "offcpu_ns": 972_774_249,
                "wakeups": 4943,
            },
        },
        "futex": {
            "repeats": futex_repeats,
            "paths": [r["path"] for r in futex_repeats],
            "lost_events": 0,
            "totals": {"waits": 500, "wait_ns": 25_000_000, "failed_waits": 5, "wake_calls": 450},
        },
    }


def futex_raw(lock_frame: str) -> dict[str, Any]:
    return {
        "probe": "futex",
        "top": [
            {
                "pid": 1,
                "uaddr": "0x55d0",
                "waits": 40,
                "wait_ns": 3_000_000,
                "stacks": [
                    {
                        "folded": f"client;main;tokio::runtime::worker::run;{lock_frame};syscall",
                        "wait_ns": 3_000_000,
                        "waits": 40,
                    }
                ],
            },
            {
                "pid": 1,
                "uaddr": "0x55d8",
                "waits": 10,
                "wait_ns": 1_000_000,
                "stacks": [
                    {"folded": "client;main;park;syscall", "wait_ns": 1_000_000, "waits": 10}
                ],
            },
        ],
        "totals": {"waits": 100, "wait_ns": 5_000_000},
    }


def build_run(run_dir: Path, make_svg: MakeSvg, make_diff_svg: MakeDiffSvg) -> dict[str, Any]:
    """Write run.json and every file it names under `run_dir`; return the run.json document."""
    run_dir.mkdir(parents=True, exist_ok=True)

    def profile(slug: str, lock: int, diff: bool, only_oncpu: bool = False) -> dict[str, Any]:
        folded = f"folded/{slug}.oncpu.folded"
        write_folded(run_dir / folded, stacks(lock))
        svg = f"flame/{slug}.oncpu.svg"
        (run_dir / "flame").mkdir(exist_ok=True)
        make_svg(run_dir / folded, run_dir / svg)
        client = sum(v for k, v in stacks(lock).items() if k.startswith("client"))
        prof: dict[str, Any] = {
            "folded": folded,
            "svg": svg,
            "samples": sum(stacks(lock).values()),
            "client_samples": client,
            "mutex_share": lock / client,
            "top_self": [
                {"frame": "write_frame", "samples": 400, "share": 400 / client},
                {"frame": MUTEX_FRAME, "samples": lock, "share": lock / client},
            ],
            "notes": [],
        }
        if only_oncpu:
            prof["notes"] = [
                "no off-CPU graph: the futex probe did not run",
                "no wake-up graph: the sched probe did not run",
                "no differential graph: the baseline has no folded stacks",
            ]
            return prof
        for kind, key in (("offcpu", "offcpu"), ("wakeups", "wakeup")):
            kind_folded = f"folded/{slug}.{kind}.folded"
            write_folded(
                run_dir / kind_folded, {"client;main;park;futex_wait": 70, "server;epoll": 30}
            )
            kind_svg = f"flame/{slug}.{kind}.svg"
            make_svg(run_dir / kind_folded, run_dir / kind_svg)
            prof[f"{key}_folded"] = kind_folded
            prof[f"{key}_svg"] = kind_svg
        prof["offcpu_ns"] = 123_456_789
        prof["wakeups"] = 4567
        if diff:
            diff_svg = f"flame/{slug}.diff.svg"
            make_diff_svg(
                run_dir / "folded/none_concurrency-256.oncpu.folded",
                run_dir / folded,
                run_dir / diff_svg,
            )
            base_share = 20 / sum(v for k, v in BASE_STACKS.items() if k.startswith("client"))
            prof |= {
                "diff_svg": diff_svg,
                "diff_baseline": "none/concurrency=256",
                "grew": [
                    {
                        "frame": MUTEX_FRAME,
                        "baseline_share": base_share,
                        "share": lock / client,
                        "delta": lock / client - base_share,
                    }
                ],
            }
        return prof

    cells = [
        ("none", 500_000.0, "none_concurrency-256", 20, False, False, 1200.0),
        ("tokio-timeout", 400_000.0, "tokio-timeout_concurrency-256", 120, True, False, 4400.0),
        ("deadline-tracker", 650_000.0, "deadline-tracker_concurrency-256", 15, False, True, 900.0),
    ]
    doc_cells: list[dict[str, Any]] = []
    for strategy, ops, slug, lock, diff, only_oncpu, futex_ns in cells:
        prof = profile(slug, lock, diff, only_oncpu)
        cell_dir = f"{strategy}/concurrency=256"
        cell_repeats = repeats(strategy, ops, prof["mutex_share"], futex_ns)
        cell: dict[str, Any] = {
            "id": cell_dir,
            "strategy": strategy,
            "scenario": "steady",
            "params": {"concurrency": 256},
            "resolved_params": {"concurrency": 256},
            "repeats": cell_repeats,
            "failures": [],
            "summary": summarize_cell(cell_repeats),
            "probes": probes(cell_dir),
            "profile": prof,
        }
        folder = run_dir / "probes" / strategy / "concurrency=256"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "r1-sched.json").write_text(json.dumps({"probe": "sched"}))
        for r in range(1, 6):
            raw = futex_raw(MUTEX_FRAME if strategy == "tokio-timeout" else "parking_lot::lock")
            (folder / f"r{r}-futex.json").write_text(json.dumps(raw))
        doc_cells.append(cell)

    evil_repeats = repeats(EVIL, 450_000.0, None, 1000.0)[:4]
    evil_probe_path = "probes/evil cell#1/r1-sched.json"
    (run_dir / evil_probe_path).parent.mkdir(parents=True, exist_ok=True)
    (run_dir / evil_probe_path).write_text("{}")
    doc_cells.append(
        {
            "id": f"{EVIL}/concurrency=256",
            "strategy": EVIL,
            "scenario": "steady",
            "params": {"concurrency": 256},
            "resolved_params": {"concurrency": 256},
            "repeats": evil_repeats,
            "failures": [
                {
                    "repeat": 5,
                    "exit_code": 101,
                    "error": "thread 'main' panicked\n<boom> & done",
                    "stderr_tail": ["<boom> & done"],
                    "elapsed_s": 12.0,
                }
            ],
            "summary": summarize_cell(evil_repeats),
            "probes": {
                "sched": {
                    "repeats": [{"repeat": 1, "path": evil_probe_path, "lost_events": 0}],
                    "paths": [evil_probe_path],
                    "lost_events": 0,
                },
                "futex": {
                    "repeats": [{"repeat": 1, "unavailable": "no CAP_BPF <here>"}],
                    "unavailable": "no CAP_BPF <here>",
                },
            },
            "profile": {},
        }
    )
    doc: dict[str, Any] = {
        "schema_version": 2,
        "run_id": "20261121T000107Z-43068e2",
        "suite": "timers",
        "status": "partial",
        "started_at": "2026-11-21T00:01:07Z",
        "finished_at": "2026-11-21T00:03:00Z",
        "git": {"commit": "43068e24df0123456789abcdef0123456789abcd", "dirty": False},
        "host": {
            "hostname": "bench-1",
            "kernel": "6.1.0",
            "cpu_model": "AMD EPYC <7302>",
            "logical_cpus": 32,
            "governor": "performance",
            "smt": True,
            "isolated_cpus": [],
            "turbo": False,
        },
        "config": {
            "binary": "target/release/timers-bench",
            "strategies": [c[0] for c in cells] + [EVIL],
            "scenario": "steady",
            "params": {"concurrency": [256]},
            "duration_s": 10.0,
            "warmup_s": 2.0,
            "repeats": 5,
            "order": "interleaved",
            "probes": ["sched", "futex"],
            "probe_overhead": True,
            "baseline": "none",
            "scale": None,
            "perf_frequency_hz": 99,
            "callgraph": "fp",
            "mutex_patterns": ["Mutex", "parking_lot", "futex"],
            "command": ["harness", "run", "timers", "--param", "concurrency=256", "--repeat", "5"],
        },
        "metrics": METRICS,
        "cells": doc_cells,
        "comparisons": compare_cells(doc_cells, "none", METRICS),
        "plots": [],
        "probe_overhead": {"sched": 0.98, "futex": 0.99, "all": 0.97},
    }
    for cell in doc_cells:
        cell["probe_overhead"] = {"sched": 0.98, "futex": 0.99, "all": 0.97}
    (run_dir / "run.json").write_text(dumps(doc) + "\n")
    return doc


def tiny_svg(folded: Path, svg: Path) -> None:
    """A small stand-in flame graph: one rect per folded line."""
    lines = folded.read_text().splitlines()
    rects = "".join(
        f'<g><title>{i}</title><rect x="0" y="{16 * i}" width="100" height="15"/></g>'
        for i, _ in enumerate(lines)
    )
    svg.write_text(
        '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="1200" '
        f'height="{16 * len(lines) + 20}"><g id="frames">{rects}</g></svg>'
    )


def tiny_diff_svg(_baseline: Path, folded: Path, svg: Path) -> None:
    tiny_svg(folded, svg)
