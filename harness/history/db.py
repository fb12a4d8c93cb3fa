"""Opening the history database: its URL (--db, $HARNESS_DB, results/history.sqlite), the
migrations that bring it to the current schema, the lock that serialises its writers, and
the one line a database failure becomes."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from harness.errors import BadInput, HarnessError
from harness.paths import results_root

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# How long a SQLite writer waits for another one (an import, a detection) to commit.
SQLITE_BUSY_S = 300.0
# The PostgreSQL advisory lock every writing transaction takes first (any fixed number).
PG_WRITE_LOCK = 0x68697374


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


# The backends and drivers the history is tested with; any other URL is refused by name rather
# than failing later on a driver that is not installed (mysql:// wants MySQLdb).
SUPPORTED_DRIVERS = {"sqlite": ("pysqlite",), "postgresql": ("psycopg", "psycopg2")}
SUPPORTED_URLS = "sqlite:///PATH or postgresql[+psycopg]://USER@HOST:PORT/DB"


def _source(url: str | None) -> str:
    """How the user gave the database: --db, $HARNESS_DB, or neither (the default)."""
    if url:
        return "--db"
    return "$HARNESS_DB" if os.environ.get("HARNESS_DB") else "the default database"


def _parse(text_url: str, source: str) -> URL:
    try:
        parsed = make_url(text_url)
        if parsed.get_driver_name() not in SUPPORTED_DRIVERS.get(parsed.get_backend_name(), ()):
            raise ValueError(f"the history does not support {parsed.drivername}://")
        parsed.get_dialect().import_dbapi()  # a supported driver that is not installed
        return parsed
    except (ArgumentError, ValueError, ImportError) as error:
        raise BadInput(
            f"{source} {text_url!r}: not a database URL ({error}; expected {SUPPORTED_URLS})"
        ) from None


def connect(url: str | None = None, *, create: bool = True) -> Engine:
    """An engine on the database at `url` (default_url()), migrated to the current schema.
    Without `create` (every command but import) a database that does not exist, or holds no
    history, is refused: a mistyped path is not shown as an empty history."""
    source = _source(url)
    parsed = _parse(url or default_url(), source)
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite and not create:
        _sqlite_file_exists(parsed, source)
    elif sqlite and parsed.database:
        folder = Path(parsed.database).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = "not a folder" if error.errno == errno.EEXIST else error.strerror
            raise BadInput(f"{source} {_shown(parsed)}: cannot create {folder}: {reason}") from None
    engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_S} if sqlite else {})
    if sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    with database_errors(engine):
        if not create and _revision(engine) is None:
            raise BadInput(f"{source} {_shown(parsed)}: {NO_HISTORY}")
        migrate(engine)
    return engine


NO_HISTORY = "no history database there (harness history import creates one)"


def _sqlite_file_exists(url: URL, source: str) -> None:
    """A SQLite database a reader names must be a file already, and not an empty one:
    connecting would create it, or write the journal's header into it."""
    file = Path(url.database or ":memory:")
    if url.database == ":memory:" or not file.is_file() or file.stat().st_size == 0:
        raise BadInput(f"{source} {_shown(url)}: {NO_HISTORY}")


def _revision(engine: Engine) -> str | None:
    """The migration the database is at; None for one with no history tables."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _shown(url: URL) -> str:
    return url.render_as_string(hide_password=True)


@contextmanager
def database_errors(engine: Engine) -> Iterator[None]:
    """A failure of the database (corrupt, read-only, unreachable, of a newer schema) as one
    line and exit 1, instead of a traceback."""
    dbapi_error = getattr(engine.dialect.loaded_dbapi, "Error", DBAPIError)
    try:
        yield
    except (SQLAlchemyError, CommandError, dbapi_error) as error:
        cause = error.orig if isinstance(error, DBAPIError) else error
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        raise HarnessError(f"history database {_shown(engine.url)}: {reason}") from None


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the database's write lock from its first statement: what it
    reads, no other writer changes until it commits (two imports of the same runs at once:
    the second finds them imported)."""
    with engine.connect() as conn, _locked(conn):
        yield conn


@contextmanager
def _locked(conn: Connection) -> Iterator[None]:
    with conn.begin():
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_WRITE_LOCK})
        yield


def migrate(engine: Engine) -> None:
    """Alembic's upgrade to head, on one connection and in one writing transaction; nothing
    written when the database is at head already (a read-only one can still be read)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    if _revision(engine) == head:
        return
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        # SQLite changes a constraint by copying the table and dropping the old one, and with
        # foreign keys on that drop would delete every row referring to it (their points,
        # events...): off for the migration (a pragma a transaction would ignore).
        if sqlite:
            _pragma(connection, "foreign_keys=OFF")
        try:
            with _locked(connection):
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        finally:
            if sqlite:
                _pragma(connection, "foreign_keys=ON")


def _pragma(conn: Connection, setting: str) -> None:
    conn.exec_driver_sql(f"PRAGMA {setting}")
    conn.commit()
