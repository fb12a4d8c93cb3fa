"""runs.probes_missing: the probes a run could not run on its machine, and why."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("probes_missing", sa.Text))


def downgrade() -> None:
    op.drop_column("runs", "probes_missing")
