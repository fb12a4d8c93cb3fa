"""The start of a run's life: the cgroups and the guardian of its workload, and what earlier
harnesses left behind, cleaned up or named before anything is measured."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from harness.catalog import find_suites
from harness.errors import HarnessError
from harness.paths import suites_path, workloads_root
from harness.run import abandoned, strangers
from harness.run.confine import Confinement


def warn(line: str) -> None:
    print(f"harness: {line}", file=sys.stderr, flush=True)


def workload_binaries(extra: Path) -> list[Path]:
    """The binaries of every suite this harness sees, and `extra` (a suite named by path)."""
    try:
        suites = list(find_suites(workloads_root(), suites_path()).suites.values())
    except HarnessError:  # a broken suite folder is reported by the commands that list it
        suites = []
    return [extra, *(suite.binary for suite in suites)]


def open_confinement(out_dir: Path, binaries: Iterable[Path]) -> Confinement:
    """The run's confinement, once abandoned runs in out_dir are marked and their leftovers
    ended; warns of workload processes that are still running all the same."""
    confinement = Confinement(warn)
    for line in abandoned.recover(out_dir, confinement.hierarchy):
        warn(f"abandoned run: {line}")
    others = strangers.running(binaries)
    if others:
        warn(f"other workload processes are running and will skew the figures: {', '.join(others)}")
    return confinement
