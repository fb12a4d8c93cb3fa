"""runs.suite_folder, suite_commit, suite_dirty: the suite's folder and the commit of the
checkout it is in (run.json's suite_source), the ends of a bisection between two runs."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("suite_folder", sa.Text))
    op.add_column("runs", sa.Column("suite_commit", sa.String(64)))
    op.add_column("runs", sa.Column("suite_dirty", sa.Boolean))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for column in ("suite_dirty", "suite_commit", "suite_folder"):
            batch.drop_column(column)
