"""Where the harness finds suites, writes results and takes its lock (each overridable by env)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def workloads_root() -> Path:
    """Folder whose subfolders with a suite.toml are the suites (env HARNESS_WORKLOADS)."""
    return Path(os.environ.get("HARNESS_WORKLOADS") or REPO_ROOT / "workloads").absolute()


def suites_path() -> list[Path]:
    """More folders of suites, searched after the workloads folder in this order
    (env HARNESS_SUITES_PATH, colon-separated; empty entries are skipped)."""
    text = os.environ.get("HARNESS_SUITES_PATH") or ""
    return [Path(entry).absolute() for entry in text.split(":") if entry]


def results_root() -> Path:
    """Folder of run outputs; run directories go to its `runs/` (env HARNESS_RESULTS)."""
    return Path(os.environ.get("HARNESS_RESULTS") or REPO_ROOT / "results")


def lock_path() -> Path:
    """The machine-wide lock file that keeps two benchmarks apart (env HARNESS_LOCK)."""
    override = os.environ.get("HARNESS_LOCK")
    if override:
        return Path(override)
    run_lock = Path("/run/lock")
    return (run_lock if run_lock.is_dir() else Path("/tmp")) / "harness.lock"
