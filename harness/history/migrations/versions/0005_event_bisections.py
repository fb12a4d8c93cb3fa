"""event_bisections: the result of `harness history bisect` for an event's series."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_bisections",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("series.id"), nullable=False),
        sa.Column(
            "run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("good", sa.String(64), nullable=False),
        sa.Column("bad", sa.String(64), nullable=False),
        sa.Column("first_bad", sa.String(64)),
        sa.Column("first_bad_subject", sa.Text),
        sa.Column("last_good", sa.String(64)),
        sa.Column("undecided_until", sa.String(64)),
        sa.Column("ratio", sa.Float),
        sa.Column("low", sa.Float),
        sa.Column("high", sa.Float),
        sa.Column("p", sa.Float),
        sa.Column("finding", sa.Text),
        sa.Column("diff_flamegraph", sa.Text),
        sa.Column("folder", sa.Text, nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("finished_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("series_id", "run_id"),
    )


def downgrade() -> None:
    op.drop_table("event_bisections")
