"""The run directory and its run.json, rewritten atomically after every repeat."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harness import stability, stats
from harness.base.writes import (
    WriteFailed,
    make_reserve,
    overwrite,
    release_reserve,
    write_atomic,
    write_failed,
)
from harness.errors import BadInput
from harness.probes import overhead_pairs
from harness.run import scratch
from harness.rundoc import jsonfile
from harness.rundoc.model import (
    SCHEMA_VERSION,
    Cell,
    Comparison,
    Config,
    Failure,
    Git,
    Host,
    Metric,
    OverheadInterval,
    Owner,
    Plot,
    ProbeSummary,
    Profile,
    Ratios,
    RunDoc,
    Status,
    SuiteSource,
    Summary,
)

if TYPE_CHECKING:
    from harness.base.owner import Owner as RunOwner
    from harness.run.plan import Plan


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def make_run_dir(out_dir: Path, commit: str | None) -> tuple[str, Path]:
    """`<out>/<UTC time>-<short commit>`, with -2, -3... when that name is taken."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_failed(err, out_dir) from err
    base = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{(commit or 'nogit')[:7]}"
    for attempt in range(1, 1000):
        run_id = base if attempt == 1 else f"{base}-{attempt}"
        try:
            (out_dir / run_id).mkdir()
        except FileExistsError:
            continue
        except OSError as err:
            raise write_failed(err, out_dir / run_id) from err
        return run_id, out_dir / run_id
    raise BadInput(f"cannot create a run directory in {out_dir}: too many runs named {base}")


def final_status(interrupted: bool, successes: int, failures: int) -> Status:
    if interrupted:
        return "interrupted"
    if successes == 0:
        return "failed"
    return "partial" if failures else "complete"


class RunRecord:
    """The owner of a run's run.json: the only code that changes the document. The runner,
    probes, profiles and plots compute values; the record stores them and writes the file."""

    def __init__(self, run_dir: Path, run: RunDoc) -> None:
        self.run_dir = run_dir
        self.run = run
        self.identity = _identity(run_dir)  # to notice the folder removed (and made again)
        self.written: RunDoc | None = None  # run.json as last written, read back

    @property
    def path(self) -> Path:
        return self.run_dir / "run.json"

    @classmethod
    def create(
        cls,
        out_dir: Path,
        plan: Plan,
        *,
        git: Mapping[str, Any],
        host: Mapping[str, Any],
        command: Sequence[str],
        suite_source: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        checkout = Git.model_validate(git)
        source = SuiteSource.model_validate(suite_source) if suite_source is not None else None
        machine = Host.model_validate(host)
        metrics = [_metric(m) for m in plan.metrics()]
        run_id, run_dir = make_run_dir(out_dir, checkout.commit)
        try:  # the scratch files' paths hold the run's id
            config = Config.model_validate(
                {**plan.config(), **scratch.config(plan, run_id), "command": list(command)}
            )
        except BaseException:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        run = RunDoc(
            schema_version=SCHEMA_VERSION,
            run_id=run_id,
            suite=plan.suite.name,
            status="running",
            started_at=utc_now(),
            finished_at=None,
            git=checkout,
            suite_source=source,
            host=machine,
            config=config,
            metrics=metrics,
            cells=[
                Cell(
                    id=cell.id,
                    strategy=cell.strategy,
                    scenario=cell.scenario,
                    params=dict(cell.params),
                    baseline=plan.compared_with(cell.strategy),
                    resolved_params={},
                    repeats=[],
                    failures=[],
                    summary={},
                    probes={},
                    profile=Profile(),
                )
                for cell in plan.cells
            ],
            comparisons=[],
            plots=[],
        )
        record = cls(run_dir, run)
        try:
            make_reserve(run_dir)
            record.write()
        except WriteFailed:
            shutil.rmtree(run_dir, ignore_errors=True)  # holds nothing yet
            raise
        return record

    def set_owner(self, owner: RunOwner) -> None:
        """The harness process running it, so that a later one can tell it died."""
        self.run.owner = Owner(pid=owner.pid, start_ticks=owner.start_ticks, boot_id=owner.boot_id)
        self.write()

    def cell(self, index: int) -> Cell:
        return self.run.cells[index]

    def add_result(self, index: int, result: Mapping[str, Any]) -> None:
        cell = self.cell(index)
        cell.repeats.append(dict(result))
        params = result.get("params")
        if not cell.resolved_params and isinstance(params, Mapping):
            cell.resolved_params = dict(params)
        cell.summary = {
            name: Summary.model_validate(figures)
            for name, figures in stats.summarize_cell(cell.repeats).items()
        }
        headline = [m.name for m in self.run.metrics if m.headline] or ["ops_per_sec"]
        watched = [*headline[:1], *stability.CPU_METRIC_NAMES]
        cell.stability = stability.cell_warnings(cell.repeats, watched) or None

    def add_failure(self, index: int, failure: Failure) -> None:
        self.cell(index).failures.append(failure)

    def set_probes(self, index: int, probes: dict[str, ProbeSummary]) -> None:
        self.cell(index).probes = probes

    def add_variant_result(self, index: int, variant: str, result: Mapping[str, Any]) -> None:
        """A --probe-overhead repeat run with another probe set than the main one."""
        cell = self.cell(index)
        variants = cell.probe_variants if cell.probe_variants is not None else {}
        variants.setdefault(variant, []).append(dict(result))
        cell.probe_variants = variants

    def add_round(self, index: int, variant: str, round_number: int) -> None:
        """--probe-overhead: the round of the probe set's latest successful repeat."""
        cell = self.cell(index)
        rounds = cell.probe_rounds if cell.probe_rounds is not None else {}
        rounds.setdefault(variant, []).append(round_number)
        cell.probe_rounds = rounds

    def set_probe_overhead(self, index: int, cell_ratios: Ratios, run_ratios: Ratios) -> None:
        self.cell(index).probe_overhead = cell_ratios
        self.run.probe_overhead = run_ratios
        # The ratios paired by round, with intervals (probes/overhead_pairs.py).
        pooled = []
        for cell in self.run.cells:
            main = [k for k in cell.probe_overhead or {} if k not in (cell.probe_variants or {})]
            variants = {**(cell.probe_variants or {}), **{k: cell.repeats for k in main}}
            ratios = overhead_pairs.paired_ratios(variants, cell.probe_rounds)
            cell.probe_overhead_paired = {
                k: OverheadInterval.model_validate(overhead_pairs.interval(v))
                for k, v in ratios.items()
            } or None
            pooled.append(ratios)
        run = overhead_pairs.run_intervals(pooled)
        self.run.probe_overhead_paired = {
            k: OverheadInterval.model_validate(v) for k, v in run.items()
        } or None

    def set_explain(self, index: int, explain_key: str, measurement_key: str) -> None:
        """The cell's explain figures (`explain_summary`) and its ratio explain / measurement
        paired by round, and that ratio over the run's cells."""
        cell = self.cell(index)
        explain = (cell.probe_variants or {}).get(explain_key, [])
        summary = stats.summarize_cell(explain)
        cell.explain_summary = {k: Summary.model_validate(v) for k, v in summary.items()} or None
        pooled: list[float] = []
        for each in self.run.cells:
            ratios = overhead_pairs.explain_ratios(
                (each.probe_variants or {}).get(explain_key, []),
                each.repeats,
                each.probe_rounds or {},
                explain_key,
                measurement_key,
            )
            if each is cell:
                cell.explain_ratio = _interval(ratios)
            pooled += ratios
        self.run.explain_ratio = _interval(pooled)

    def set_profiles(self, profiles: Sequence[Profile | None]) -> None:
        """One per cell, in order; None keeps the cell's profile as it is."""
        for cell, profile in zip(self.run.cells, profiles, strict=True):
            if profile is not None:
                cell.profile = profile

    def set_plots(self, plots: list[Plot]) -> None:
        self.run.plots = plots

    def counts(self) -> tuple[int, int]:
        """(successful repeats, failed repeats) over all cells."""
        cells = self.run.cells
        return sum(len(c.repeats) for c in cells), sum(len(c.failures) for c in cells)

    def finish(self, interrupted: bool) -> Status:
        successes, failures = self.counts()
        status = final_status(interrupted, successes, failures)
        self.run.status = status
        self.run.finished_at = utc_now()
        self.write()  # the final status is saved even if the comparisons below fail
        doc = jsonfile.as_json(self.run)
        self.run.comparisons = [
            Comparison.model_validate(entry)
            for entry in stats.compare_cells(doc["cells"], self.run.config.baseline, doc["metrics"])
        ]
        self.write()
        release_reserve(self.run_dir)
        return status

    def fail(self, reason: str) -> bool:
        """End the run `failed` with `reason` (a write error) where run.json can still be
        written, if need be in the room the reserve kept; whether it could."""
        # Failed over a figure run.json cannot hold: the run as last written says so.
        if self.written is not None and _unreadable(self._text()) is not None:
            self.run = self.written
        self.run.status = "failed"
        self.run.error = reason
        self.run.finished_at = utc_now()
        release_reserve(self.run_dir)
        if _identity(self.run_dir) != self.identity:
            return False
        text = self._text()
        try:
            write_atomic(self.path, text)
        except OSError:
            try:
                overwrite(self.path, text)
            except OSError:
                return False
        return True

    def write(self) -> None:
        """run.json, atomically, and only as the harness reads it back: WriteFailed (one
        line: the path and the error) otherwise, e.g. for a figure JSON cannot hold."""
        if _identity(self.run_dir) != self.identity:
            raise WriteFailed(f"cannot write {self.path}: the run directory was removed")
        text = self._text()
        try:
            doc = RunDoc.model_validate_json(text)
        except ValidationError as error:
            problem = _first_problem(error)
            raise WriteFailed(
                f"cannot write {self.path}: it would not read back: {problem}"
            ) from error
        try:
            write_atomic(self.path, text)
        except OSError as err:
            raise write_failed(err, self.path) from err
        self.written = doc

    def _text(self) -> str:
        return jsonfile.dumps(self.run) + "\n"


def _unreadable(text: str) -> str | None:
    """Why the harness would refuse this run.json text as it reads it (where and what, of
    the first problem), or None."""
    try:
        RunDoc.model_validate_json(text)
    except ValidationError as error:
        return _first_problem(error)
    return None


def _first_problem(error: ValidationError) -> str:
    """Where and what, of the first thing the harness refuses in a run.json."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    # JSON has no infinity: the one figure the dump turns into null (harness/base/writes.py).
    infinite = first["type"] == "float_type" and first["input"] is None
    cause = " (an infinite figure, written as null)" if infinite else ""
    return f"{where}: {first['msg']}{cause}"


def _interval(ratios: Sequence[float]) -> OverheadInterval:
    return OverheadInterval.model_validate(overhead_pairs.interval(ratios))


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        stat = folder.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _metric(declared: Mapping[str, Any]) -> Metric:
    """The keys of a declaration that run.json keeps (a workload may declare more)."""
    return Metric.model_validate({k: v for k, v in declared.items() if k in Metric.model_fields})
