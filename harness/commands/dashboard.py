"""`harness dashboard`: the static site of the history (opens from file://, no network)."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path

from harness.commands.history.reading import DB_HELP
from harness.commands.parsing import FORMATTER, Commands, help_text
from harness.errors import BadInput, HarnessError
from harness.paths import results_root


def add_parser(commands: Commands) -> None:
    p = commands.add_parser(
        "dashboard",
        help="write the history's static dashboard (default: results/dashboard/)",
        formatter_class=FORMATTER,
        description=help_text("""
            Write the dashboard of the history database: an overview with the events to
            triage, per suite a grid of strategy x parameters, per series a trend chart with
            its change points, per machine its runs, and a compare view of any two runs. The
            site opens from file:// without a network; open OUT/index.html.
            """),
    )
    p.add_argument("--out", type=Path, metavar="DIR", help="default: results/dashboard")
    p.add_argument("--db", metavar="URL", help=DB_HELP)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from harness.dashboard.site import build_site  # SQLAlchemy, numpy: not for --help
    from harness.history.db import connect, database_errors

    out = args.out or results_root() / "dashboard"
    engine = connect(args.db, create=False)
    try:
        with database_errors(engine), engine.connect() as conn:
            pages = build_site(conn, out)
    except OSError as error:
        where = f"--out {out}: cannot write the dashboard: {error.strerror}"
        # A rename's error names the temporary file first and the page second.
        path = error.filename2 or error.filename
        if path is not None and str(path) != str(out):
            where += f" ({path})"
        # A path that cannot be a folder is the user's to fix; a read-only or full disk is not.
        if error.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.ENAMETOOLONG):
            raise BadInput(where) from None
        raise HarnessError(where) from None
    print(f"dashboard: {out / 'index.html'} ({pages} pages)")
    return 0
