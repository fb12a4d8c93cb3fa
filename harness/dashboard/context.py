"""The site being written: the history it shows, where it goes, and what its pages share:
each file written whole, the links to the runs' folders, the names of machines and suites."""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.dashboard.data import History, Run
from harness.history.bisect_ranges import SeriesRange


class Site:
    """What every page writer is given: the history (`h`), the site's folder (`out`), the
    files written so far (`pages`), and the history's indexes the pages share."""

    def __init__(self, history: History, out: Path) -> None:
        self.h = history
        self.out = out
        self.pages = 0
        self._run_dirs: dict[tuple[int, int], str] = {}
        self.changes_of: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for change in history.changes:
            self.changes_of[change["series_id"]].append(change)
        # A change's run: two machines of a fleet can share a run id, so the machine is part of it.
        self.pks = {
            (history.machines[run.machine_id]["fingerprint"], run.run_id): pk
            for pk, run in history.runs.items()
        }
        suites = sorted({(s.machine_id, s.suite) for s in history.series.values()})
        suites += sorted({(r.machine_id, r.suite) for r in history.runs.values()} - set(suites))
        self.suite_page = {key: f"suite-{i + 1}.html" for i, key in enumerate(sorted(suites))}
        # (run pk, series id) -> the commit range of its regression; event -> the range of its
        # largest regression, the one its row offers to bisect.
        self.bisect_range = {(r.run_pk, r.series_id): r for r in history.bisect_ranges}
        self.event_range: dict[int, SeriesRange] = {}
        for found in history.bisect_ranges:
            self.event_range.setdefault(found.event, found)
        self.suite_runs: dict[tuple[int, str], list[Run]] = defaultdict(list)
        for run in history.runs.values():
            self.suite_runs[(run.machine_id, run.suite)].append(run)

    def write(self, rel: str, html: str) -> None:
        replace_file(self.out / rel, html.encode("utf-8"))
        self.pages += 1

    def run_link(self, run: Run, rel: str | None, depth: int) -> str | None:
        """The link from a page `depth` folders down the site to `rel` in the run's folder."""
        if rel is None:
            return None
        key = (run.pk, depth)
        if key not in self._run_dirs:
            folder = os.path.relpath(run.run_dir, self.out / ("x/" * depth))
            self._run_dirs[key] = folder.replace(os.sep, "/")
        return f"{self._run_dirs[key]}/{rel}"

    def file_link(self, path: str, depth: int) -> str:
        """The link from a page `depth` folders down the site to the file at `path`
        (absolute: a bisection's files under results/bisect/)."""
        return os.path.relpath(path, self.out / ("x/" * depth)).replace(os.sep, "/")

    def report_link(self, run: Run, depth: int) -> str:
        """The run's report.html, else its run.json."""
        link = self.run_link(run, run.report or "run.json", depth)
        assert link is not None
        return link

    def machine_name(self, machine_id: int) -> str:
        machine = self.h.machines[machine_id]
        return f"{machine['hostname'] or '?'} ({machine['fingerprint'][:8]})"

    def name(self, key: tuple[int, str]) -> str:
        return self.suite_page[key].removesuffix(".html")


def replace_file(path: Path, content: bytes) -> None:
    """Write `path` whole or not at all: a temporary file in its folder renamed over it, so
    that a link of that name is replaced, never written through."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
        os.chmod(temp, 0o644)  # mkstemp's 0600 would hide the site from a web server
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
