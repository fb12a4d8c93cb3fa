"""A run is identified by its machine and its run id: two machines of a fleet that start in
the same second (and commit) share a run id, and each keeps its run."""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# SQLite has no name for 0001's `unique=True` on runs.run_id (PostgreSQL calls it
# runs_run_id_key): the batch copy of the table names it by this convention to drop it.
SQLITE_NAMES = {"uq": "%(table_name)s_%(column_0_name)s_key"}


def upgrade() -> None:
    with op.batch_alter_table("runs", naming_convention=SQLITE_NAMES) as batch:
        batch.drop_constraint("runs_run_id_key", type_="unique")
        batch.create_unique_constraint("runs_machine_run", ["machine_id", "run_id"])


def downgrade() -> None:
    with op.batch_alter_table("runs", naming_convention=SQLITE_NAMES) as batch:
        batch.drop_constraint("runs_machine_run", type_="unique")
        batch.create_unique_constraint("runs_run_id_key", ["run_id"])
