"""The history database: machines, runs, series, points, samples, artifacts, events, change
points, acknowledgements."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _run_ref() -> sa.Column[int]:
    """The run a row belongs to: deleting the run deletes the row."""
    return sa.Column(
        "run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
    )


def _machines_and_runs() -> None:
    op.create_table(
        "machines",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
        sa.Column("hostname", sa.String(255)),
        sa.Column("keys", sa.Text, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.String(128), nullable=False, unique=True),
        sa.Column("suite", sa.String(255), nullable=False),
        sa.Column("machine_id", sa.Integer, sa.ForeignKey("machines.id"), nullable=False),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_dirty", sa.Boolean),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("finished_at", sa.String(32)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("baseline", sa.String(255)),
        sa.Column("kernel", sa.String(255)),
        sa.Column("toolchains", sa.Text),
        sa.Column("run_dir", sa.Text, nullable=False),
        sa.Column("report", sa.Text),
        sa.Column("doc_sha256", sa.String(64), nullable=False),
        sa.Column("imported_at", sa.String(32), nullable=False),
        sa.Column("detected", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_index("runs_machine_suite_started", "runs", ["machine_id", "suite", "started_at"])


def _series_points_samples() -> None:
    op.create_table(
        "series",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("machine_id", sa.Integer, sa.ForeignKey("machines.id"), nullable=False),
        sa.Column("suite", sa.String(255), nullable=False),
        sa.Column("strategy", sa.String(255), nullable=False),
        sa.Column("scenario", sa.String(255), nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("metric", sa.String(255), nullable=False),
        sa.Column("unit", sa.String(64)),
        sa.Column("better", sa.String(16)),
        sa.UniqueConstraint("machine_id", "suite", "strategy", "scenario", "params", "metric"),
    )
    op.create_table(
        "points",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id"), nullable=False),
        _run_ref(),
        sa.Column("median", sa.Float, nullable=False),
        sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float),
        sa.Column("n", sa.Integer, nullable=False),
        sa.UniqueConstraint("series_id", "run_id"),
    )
    op.create_index("points_run", "points", ["run_id"])
    op.create_table(
        "samples",
        sa.Column(
            "point_id",
            sa.Integer,
            sa.ForeignKey("points.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
    )


def _artifacts() -> None:
    op.create_table(
        "artifacts",
        sa.Column("id", sa.Integer, primary_key=True),
        _run_ref(),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("cell", sa.Text),
        sa.Column("path", sa.Text, nullable=False),
    )
    op.create_index("artifacts_run", "artifacts", ["run_id"])


def _events_and_acknowledgements() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        _run_ref(),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("annotations", sa.Text, nullable=False),
        sa.UniqueConstraint("run_id"),
    )
    op.create_table(
        "change_points",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id"), nullable=False),
        _run_ref(),
        sa.Column(
            "event_id",
            sa.Integer,
            sa.ForeignKey("events.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("before", sa.Float, nullable=False),
        sa.Column("after", sa.Float, nullable=False),
        sa.Column("change", sa.Float, nullable=False),
        sa.Column("noise", sa.Float, nullable=False),
        sa.Column("p_value", sa.Float, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.UniqueConstraint("series_id", "run_id"),
    )
    op.create_index("change_points_event", "change_points", ["event_id"])
    op.create_table(
        "acknowledgements",
        sa.Column("id", sa.Integer, primary_key=True),
        _run_ref(),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("acknowledged_at", sa.String(32), nullable=False),
        sa.Column("acknowledged_by", sa.String(255)),
        sa.UniqueConstraint("run_id"),
    )


def upgrade() -> None:
    # In dependency order: each table after the ones its foreign keys point at.
    _machines_and_runs()
    _series_points_samples()
    _artifacts()
    _events_and_acknowledgements()


def downgrade() -> None:
    for table in (
        "acknowledgements",
        "change_points",
        "events",
        "artifacts",
        "samples",
        "points",
        "series",
        "runs",
        "machines",
    ):
        op.drop_table(table)
