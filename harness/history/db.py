"""Opening the history database: its URL (--db, $HARNESS_DB, results/history.sqlite) and the
migrations that bring it to the current schema."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError

from harness.errors import BadInput
from harness.paths import results_root

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def default_url() -> str:
    """$HARNESS_DB, else SQLite at results/history.sqlite."""
    return os.environ.get("HARNESS_DB") or f"sqlite:///{results_root() / 'history.sqlite'}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    # Write-ahead log: a commit per imported run without a full sync of the database file,
    # and readers (the dashboard) never blocked by an import.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def connect(url: str | None = None) -> Engine:
    """An engine on the database at `url` (default_url()), migrated to the current schema."""
    text = url or default_url()
    try:
        parsed = make_url(text)
    except ArgumentError:
        raise BadInput(
            f"--db {text!r}: not a database URL (sqlite:///PATH or postgresql+psycopg://...)"
        ) from None
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed)
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    try:
        migrate(engine)
    except OperationalError as error:
        reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        raise BadInput(f"cannot open the history database {parsed!r}: {reason}") from None
    return engine


def migrate(engine: Engine) -> None:
    """Alembic's upgrade to head, on one connection and in one transaction."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
