"""The history database's tables (SQLAlchemy Core), one schema for SQLite and PostgreSQL.

Alembic's migrations in harness/history/migrations create and change them; this module is
what the code reads and writes through, and a test keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

metadata = MetaData()


def run_ref() -> Column[int]:
    """The run a row belongs to: deleting the run deletes the row."""
    return Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)


def _one_per_run(name: str, *columns: Column[Any]) -> Table:
    """A table of at most one row per run, with these columns after its id and run_id."""
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True),
        run_ref(),
        *columns,
        UniqueConstraint("run_id"),
    )


def _one_per_series_and_run(name: str, *items: Column[Any] | Index) -> Table:
    """A table of at most one row per series and run, with these columns (and indexes)
    after its id, series_id and run_id."""
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True),
        Column("series_id", Integer, ForeignKey("series.id"), nullable=False),
        run_ref(),
        *items,
        UniqueConstraint("series_id", "run_id"),
    )


machines = Table(
    "machines",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("fingerprint", String(64), nullable=False, unique=True),
    Column("hostname", String(255)),
    # The canonical JSON of the keys that were hashed, so that a fingerprint can be audited.
    Column("keys", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    # Unique per machine only: two machines started in the same second share a run id.
    Column("run_id", String(128), nullable=False),
    Column("suite", String(255), nullable=False),
    Column("machine_id", Integer, ForeignKey("machines.id"), nullable=False),
    Column("git_commit", String(64)),
    Column("git_dirty", Boolean),
    # run.json's suite_source: the suite's folder and the commit of its checkout, which a
    # bisection between two runs takes (null in runs of older harnesses).
    Column("suite_folder", Text),
    Column("suite_commit", String(64)),
    Column("suite_dirty", Boolean),
    Column("started_at", String(32), nullable=False),
    Column("finished_at", String(32)),
    Column("status", String(16), nullable=False),
    # The strategy the run compared the others with (config.baseline).
    Column("baseline", String(255)),
    Column("kernel", String(255)),
    # JSON object tool -> version (rustc, go), when run.json records it.
    Column("toolchains", Text),
    Column("run_dir", Text, nullable=False),
    Column("report", Text),
    # JSON object probe -> why it could not run on the run's machine (config.probes_unavailable,
    # or the cells' `unavailable` in older run.json); null when every probe ran.
    Column("probes_missing", Text),
    # sha256 of run.json: importing the same file again changes nothing.
    Column("doc_sha256", String(64), nullable=False),
    Column("imported_at", String(32), nullable=False),
    # False from import until the detection has seen the run (harness/history/events.py): a
    # detection interrupted after an import runs again at the next one.
    Column("detected", Boolean, nullable=False, server_default=false()),
    Index("runs_machine_suite_started", "machine_id", "suite", "started_at"),
    UniqueConstraint("machine_id", "run_id", name="runs_machine_run"),
)

series = Table(
    "series",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("machine_id", Integer, ForeignKey("machines.id"), nullable=False),
    Column("suite", String(255), nullable=False),
    Column("strategy", String(255), nullable=False),
    Column("scenario", String(255), nullable=False),
    # Canonical JSON (sorted keys) of the cell's parameters.
    Column("params", Text, nullable=False),
    Column("metric", String(255), nullable=False),
    Column("unit", String(64)),
    # `higher`, `lower` or null (no direction: changes are shown, never regressions).
    Column("better", String(16)),
    UniqueConstraint("machine_id", "suite", "strategy", "scenario", "params", "metric"),
)

points = _one_per_series_and_run(
    "points",
    Column("median", Float, nullable=False),
    Column("ci_low", Float),
    Column("ci_high", Float),
    Column("n", Integer, nullable=False),
    # The strategy the cell was compared with in the run (run.json's cells[].baseline: its
    # twin or the run's baseline); null for a cell compared with nothing (the baseline's own).
    Column("baseline", String(255)),
    Index("points_run", "run_id"),
)

samples = Table(
    "samples",
    metadata,
    Column("point_id", Integer, ForeignKey("points.id", ondelete="CASCADE"), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("value", Float, nullable=False),
)

artifacts = Table(
    "artifacts",
    metadata,
    Column("id", Integer, primary_key=True),
    run_ref(),
    # `report`, `summary`, `flame`, `diff_flame`, `offcpu_flame`, `wakeup_flame`, `plot`.
    Column("kind", String(32), nullable=False),
    # The cell the file belongs to, as canonical JSON [strategy, scenario, params] (what
    # series are keyed by); null for the run's own files.
    Column("cell", Text),
    # Relative to the run directory.
    Column("path", Text, nullable=False),
    Index("artifacts_run", "run_id"),
)

# The run is the first one at the new level; one event per run groups its change points.
events = _one_per_run(
    "events",
    Column("score", Float, nullable=False),
    # What else changed at this run (kernel, CPU model, toolchain): a JSON list of lines.
    Column("annotations", Text, nullable=False),
)

change_points = _one_per_series_and_run(
    "change_points",
    Column("event_id", Integer, ForeignKey("events.id", ondelete="CASCADE"), nullable=False),
    # `newest` (the newest run against the previous good one) or `edivisive` (retrospective).
    Column("method", String(16), nullable=False),
    Column("before", Float, nullable=False),
    Column("after", Float, nullable=False),
    # after / before - 1.
    Column("change", Float, nullable=False),
    Column("noise", Float, nullable=False),
    Column("p_value", Float, nullable=False),
    # `regression`, `improvement` or `change` (a metric without direction).
    Column("kind", String(16), nullable=False),
    Index("change_points_event", "event_id"),
)

# By run, not by event row: an event recomputed after a later import stays acknowledged.
acknowledgements = _one_per_run(
    "acknowledgements",
    Column("reason", Text, nullable=False),
    Column("acknowledged_at", String(32), nullable=False),
    Column("acknowledged_by", String(255)),
)

# A bisection of an event's series (harness history bisect), by run as acknowledgements are:
# the event recomputed after a later import keeps it. A new bisection of the same series and
# run replaces it; one that failed or was interrupted stores nothing.
event_bisections = _one_per_series_and_run(
    "event_bisections",
    # bisect.json's status: `found`, `no-regression`, `undecided` or `untestable`.
    Column("verdict", String(16), nullable=False),
    # The range bisected: the commits of the run before the change and of the event's run.
    Column("good", String(64), nullable=False),
    Column("bad", String(64), nullable=False),
    Column("first_bad", String(64)),
    Column("first_bad_subject", Text),
    Column("last_good", String(64)),
    # Undecided or untestable: the first bad commit known (the culprit is after last_good
    # and at most this one).
    Column("undecided_until", String(64)),
    # The first bad build against the good end's: the ratio, its 95% interval, the paired p.
    Column("ratio", Float),
    Column("low", Float),
    Column("high", Float),
    Column("p", Float),
    Column("finding", Text),
    # Absolute paths: the differential flame graph (SVG) and the bisection's folder.
    Column("diff_flamegraph", Text),
    Column("folder", Text, nullable=False),
    # The `harness bisect` command line that ran, as the shell takes it.
    Column("command", Text, nullable=False),
    Column("finished_at", String(32), nullable=False),
)

# A run that ran the cells of another run's provisional changes again, interleaved with their
# baseline cells (run.json config.confirms; harness history confirm). Its repeats decide those
# changes (harness/history/detection.py) and are no points of the series: they are kept here,
# apart. Deleting the confirmed run deletes them.
confirmations = Table(
    "confirmations",
    metadata,
    Column("id", Integer, primary_key=True),
    # The run whose changes it confirms.
    run_ref(),
    # The confirming run's own run id, its status, folder and run.json's sha256.
    Column("confirming_run", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    Column("run_dir", Text, nullable=False),
    Column("doc_sha256", String(64), nullable=False),
    Column("imported_at", String(32), nullable=False),
    UniqueConstraint("run_id", "confirming_run"),
)

confirming_samples = Table(
    "confirming_samples",
    metadata,
    Column(
        "confirmation_id",
        Integer,
        ForeignKey("confirmations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("series_id", Integer, ForeignKey("series.id"), primary_key=True),
    Column("repeat", Integer, primary_key=True),
    Column("value", Float, nullable=False),
)
