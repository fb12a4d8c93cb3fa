"""What the actions of `harness history` share: the --db option and a read-only query."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from sqlalchemy import Connection

T = TypeVar("T")

DB_HELP = (
    "database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB "
    "(default: $HARNESS_DB, else sqlite:///results/history.sqlite)"
)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", help=DB_HELP)


def read(args: argparse.Namespace, query: Callable[[Connection], T]) -> T:
    """What query reads from the history at --db (which must exist)."""
    from harness.history.db import connect, database_errors  # SQLAlchemy: not for --help

    engine = connect(args.db, create=False)
    with database_errors(engine), engine.connect() as conn:
        return query(conn)
