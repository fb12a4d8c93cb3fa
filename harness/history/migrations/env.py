"""Alembic environment: migrates the connection harness/history/db.py hands over."""

from __future__ import annotations

from alembic import context

from harness.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
