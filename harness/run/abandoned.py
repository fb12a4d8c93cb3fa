"""Runs whose harness died (SIGKILL, out of memory, a crash) stay `running` in run.json; the
next harness, holding the machine lock, marks them `abandoned`, ends their leftover
processes and removes their temporary files and scratch folders before it starts its own
run."""

from __future__ import annotations

import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from harness.base.owner import Owner
from harness.probes.record import EXPLAIN_FOLDER, cell_folder
from harness.run import leftovers, scratch
from harness.run.cgroup import Hierarchy, owner_groups
from harness.run.recorder import RunRecord
from harness.rundoc.jsonfile import RunLoadError, load_run
from harness.rundoc.model import RunDoc

HEAD_BYTES = 4096  # `status` is among run.json's first keys
_RUNNING = re.compile(rb'"status":\s*"running"')
_REPEAT_FILE = re.compile(r"^r(\d+)-")


def running_runs(out_dir: Path) -> Iterator[Path]:
    """Run directories whose run.json says `running`, read cheaply (only its head)."""
    try:
        folders = sorted(p for p in out_dir.iterdir() if p.is_dir())
    except OSError:
        return
    for folder in folders:
        try:
            with (folder / "run.json").open("rb") as f:
                head = f.read(HEAD_BYTES)
        except OSError:
            continue
        if _RUNNING.search(head):
            yield folder


def run_owner(run: RunDoc) -> Owner | None:
    return Owner(run.owner.pid, run.owner.start_ticks, run.owner.boot_id) if run.owner else None


def is_abandoned(run: RunDoc) -> bool:
    """Its owner is dead; a run that names none was started by an older harness, dead since
    this one holds the machine lock. Another machine's runs are left alone."""
    if run.host.hostname != socket.gethostname():
        return False
    owner = run_owner(run)
    return owner is None or not owner.alive()


def recover(out_dir: Path, hierarchy: Hierarchy | None) -> list[str]:
    """Mark every abandoned run under out_dir and clean up after it; one line per run."""
    lines = []
    for folder in running_runs(out_dir):
        try:
            run = load_run(folder)
        except RunLoadError:
            continue
        if is_abandoned(run):
            lines.append(f"{folder}: {mark(folder, run, hierarchy, 'found at the next start')}")
    for token, group in owner_groups(hierarchy).items() if hierarchy else ():
        found = Owner.from_token(token)
        if found is not None and not found.alive():  # a run elsewhere, or its run.json lost
            leftovers.end_processes(token, hierarchy)
            group.remove()
    return lines


def mark(folder: Path, run: RunDoc, hierarchy: Hierarchy | None, found: str, ended: int = 0) -> str:
    """End the run's leftovers, remove its partial files, set status `abandoned` with the
    reason; returns the reason. `ended`: leftover processes the caller ended already."""
    owner = run_owner(run)
    token = owner.token if owner else None
    who = f"pid {owner.pid}" if owner else "pid unknown"
    ended += leftovers.end_processes(token, hierarchy) if token else 0
    removed = (leftovers.remove_perf_folders(token) if token else 0) + _remove_partial(folder, run)
    files = [entry.path for entry in run.config.scratch or []]
    scratch_folders = scratch.remove_recorded(files, run.run_id)
    reason = (
        f"its harness ({who}) died before the run ended ({found}); "
        f"{_count(ended, 'leftover workload process')} ended, "
        f"{_count(removed, 'partial file')} removed"
        + (f", {_count(scratch_folders, 'scratch folder')} removed" if scratch_folders else "")
    )
    record = RunRecord(folder, run)
    last_write = (folder / "run.json").stat().st_mtime
    run.status = "abandoned"
    run.finished_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last_write))
    run.abandoned_reason = reason
    record.write()
    return reason


def _remove_partial(folder: Path, run: RunDoc) -> int:
    """Probe output of the repeat in flight (run.json does not point at it, also in a cell's
    explain folder), perf.data, the --probe-overhead folders and temporary files of atomic
    writes; how many."""
    removed = 0
    for tmp in folder.glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
        removed += 1
    for cell in run.cells:
        probes = cell_folder(folder, cell.id)
        entries = [r for summary in cell.probes.values() for r in summary.repeats]
        for overhead in probes.glob("overhead-*"):
            shutil.rmtree(overhead, ignore_errors=True)
            removed += 1
        for where in (probes, probes / EXPLAIN_FOLDER):
            # The repeats (rounds, for the explain repeats) run.json has files of there.
            kept = {r.repeat for r in entries if r.path and (folder / r.path).parent == where}
            for path in where.glob("r*-*") if where.is_dir() else ():
                match = _REPEAT_FILE.match(path.name)
                partial = path.name.endswith(".perf.data") or path.stat().st_size == 0
                if path.is_file() and match and (partial or int(match[1]) not in kept):
                    path.unlink(missing_ok=True)
                    removed += 1
    return removed


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 'es' if thing.endswith('s') else 's'}"
