"""confirmations, confirming_samples: the repeats of the runs that confirmed another run's
provisional changes (run.json config.confirms), kept apart from the series' points."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "confirmations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("confirming_run", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("run_dir", sa.Text, nullable=False),
        sa.Column("doc_sha256", sa.String(64), nullable=False),
        sa.Column("imported_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("run_id", "confirming_run"),
    )
    op.create_table(
        "confirming_samples",
        sa.Column(
            "confirmation_id",
            sa.Integer,
            sa.ForeignKey("confirmations.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id"), primary_key=True),
        sa.Column("repeat", sa.Integer, primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("confirming_samples")
    op.drop_table("confirmations")
