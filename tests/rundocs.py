"""Complete run.json documents (schema_version 2) for tests that write one by hand: every key
the schema requires, with the test's own figures where it gives them."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from harness.rundoc.schema import SCHEMA_FILE
from harness.stats import summarize_cell

# The top-level keys every run.json the harness writes has.
RUN_KEYS = {
    "schema_version",
    "run_id",
    "suite",
    "status",
    "started_at",
    "finished_at",
    "git",
    "host",
    "config",
    "metrics",
    "cells",
    "comparisons",
    "plots",
    "owner",
    "suite_source",
}


def host(**facts: Any) -> dict[str, Any]:
    return {
        "hostname": "bench1",
        "kernel": "6.8.0",
        "cpu_model": "EPYC",
        "logical_cpus": 32,
        "governor": "performance",
        "smt": True,
        "isolated_cpus": [],
        "turbo": False,
    } | facts


def config(**settings: Any) -> dict[str, Any]:
    return {
        "binary": "target/release/timers-bench",
        "strategies": ["none"],
        "scenario": "steady",
        "params": {},
        "duration_s": 10.0,
        "warmup_s": 2.0,
        "repeats": 5,
        "order": "interleaved",
        "probes": [],
        "probe_overhead": False,
        "baseline": "none",
        "scale": None,
        "perf_frequency_hz": 99,
        "callgraph": "fp",
        "mutex_patterns": ["mutex"],
        "command": ["harness", "run", "timers"],
    } | settings


def cell(
    strategy: str, scenario: str, params: dict[str, Any], repeats: list[dict[str, Any]], **keys: Any
) -> dict[str, Any]:
    shown = "/".join([strategy, *(f"{k}={v}" for k, v in params.items())])
    return {
        "id": shown,
        "strategy": strategy,
        "scenario": scenario,
        "params": params,
        "resolved_params": dict(params),
        "repeats": repeats,
        "failures": [],
        "summary": summarize_cell(repeats),
        "probes": {},
        "profile": {},
    } | keys


def run(cells: list[dict[str, Any]], **keys: Any) -> dict[str, Any]:
    return {
        "schema_version": 2,
        "run_id": "20250101T000000Z-abc1234",
        "suite": "timers",
        "status": "complete",
        "started_at": "2025-01-01T00:00:00Z",
        "finished_at": "2025-01-01T00:10:00Z",
        "git": {"commit": "abc1234def", "dirty": False},
        "host": host(),
        "config": config(),
        "metrics": [{"name": "ops_per_sec", "unit": "ops/s", "better": "higher"}],
        "cells": cells,
        "comparisons": [],
        "plots": [],
    } | keys


def schema_problems(doc: Any) -> list[str]:
    """Where `doc` breaks docs/run.schema.json (the committed file, not the model)."""
    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    return [
        f"{error.json_path}: {error.message}"
        for error in sorted(validator.iter_errors(doc), key=lambda e: e.json_path)
    ]
