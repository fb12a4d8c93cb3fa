"""The databases the history tests run against: SQLite in a temporary file, and a real
PostgreSQL server (Debian's postgresql, installed by make deps) that a session fixture
creates with initdb in a temporary folder, starts on 127.0.0.1 on a free port as the
postgres user, and always stops."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from requirements import need


def _pg_bin() -> Path:
    """$HARNESS_PG_BIN, else the newest of Debian's /usr/lib/postgresql/<version>/bin."""
    if os.environ.get("HARNESS_PG_BIN"):
        return Path(os.environ["HARNESS_PG_BIN"])
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else Path("/usr/lib/postgresql/bin")


PG_BIN = _pg_bin()
PG_USER = "postgres"


def postgres_problem() -> str | None:
    if not (PG_BIN / "initdb").exists():
        return f"no {PG_BIN}/initdb: apt-get install postgresql"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "runuser not found: cannot run postgres as a non-root user"
    return None


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *argv] if os.geteuid() == 0 else argv


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields its URL base (postgresql+psycopg://postgres@127.0.0.1:PORT)."""
    need(postgres_problem())
    folder = Path(tempfile.mkdtemp(prefix="harness-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, PG_USER, PG_USER)
    port = _free_port()
    subprocess.run(
        _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", PG_USER, "--auth=trust"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    subprocess.run(
        _as_postgres(
            [
                str(PG_BIN / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(folder / "log"),
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        yield f"postgresql+psycopg://{PG_USER}@127.0.0.1:{port}"
    finally:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            timeout=120,
            check=False,
        )
        shutil.rmtree(folder, ignore_errors=True)


def create_database(base_url: str, name: str) -> str:
    import psycopg

    dsn = base_url.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base_url}/{name}"


def readonly_mount_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare not found (util-linux): cannot mount a folder read-only"
    probe = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return f"unshare --mount --map-root-user fails: {probe.stderr.decode().strip()}"
    return None


def readonly_argv(paths: list[Path], argv: list[str]) -> list[str]:
    """`argv` run where each of `paths` is a read-only bind mount of itself: a private mount
    namespace (unshare, no privilege needed), so that even root cannot write there and no
    mount outlives the command."""
    need(readonly_mount_problem())
    script = " && ".join(
        f'mount --bind "${i + 1}" "${i + 1}" && mount -o remount,bind,ro "${i + 1}"'
        for i in range(len(paths))
    )
    shift = f"shift {len(paths)}"
    return [
        "unshare",
        "--mount",
        "--map-root-user",
        "sh",
        "-c",
        f'{script} && {shift} && exec "$@"',
        "sh",
        *map(str, paths),
        *argv,
    ]
