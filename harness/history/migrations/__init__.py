"""Alembic migrations of the history database (harness/history/db.py runs them)."""
