"""points.baseline: the strategy each cell was compared with in its run, its twin (describe's
compare_with) or the run's baseline, so that the dashboard's ratio is the run's own. The
points of runs imported before are those of runs without twins: each compared with the run's
baseline, but the baseline's own."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("points", sa.Column("baseline", sa.String(255)))
    op.execute(
        "UPDATE points SET baseline = (SELECT runs.baseline FROM runs, series "
        "WHERE runs.id = points.run_id AND series.id = points.series_id "
        "AND series.strategy <> runs.baseline)"
    )


def downgrade() -> None:
    op.drop_column("points", "baseline")
