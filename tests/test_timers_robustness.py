"""End to end: the timers suite's servers and runs against what a client or the machine can do
to them (issue 32, items 7 to 11): a client that never reads its answers, a statement whose
answer would be huge, a server out of descriptors, a timeout so tight the driver gives up
before sending, more connections than the descriptor limit, and timer-ops' ops/s.

The servers run as `timers-bench serve` on 127.0.0.1, each stopped (killed and reaped) by
the test that started it."""

from __future__ import annotations

import json
import queue
import resource
import select
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from test_timers_e2e import run_timers, timers_env  # noqa: F401 (the fixture)

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.e2e

BIN = REPO_ROOT / "workloads" / "timers" / "target" / "release" / "timers-bench"
PROTOCOLS = ("timers", "cql")
# How long a step that needs only a few wake-ups may take on a busy machine.
STEP_S = 30.0


@pytest.fixture(autouse=True)
def built() -> None:
    if not BIN.exists():
        pytest.fail(f"the timers binary {BIN} is not built: run `make deps`")


def nofile(limit: int) -> Callable[[], None]:
    """A preexec_fn that sets the child's descriptor limit (soft and hard) to `limit`."""

    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return set_limit


@dataclass
class Served:
    proc: subprocess.Popen[str]
    port: int
    stderr: queue.Queue[str | None]

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError(f"no VmRSS for server {self.proc.pid}")

    def wait_stderr(self, needle: str) -> list[str]:
        """The server's stderr lines up to the first holding `needle`; stops at its end (the
        server exited) or after STEP_S without a line."""
        seen: list[str] = []
        while True:
            try:
                line = self.stderr.get(timeout=STEP_S)
            except queue.Empty:
                return seen
            if line is None:
                return seen
            seen.append(line)
            if needle in line:
                return seen


@contextmanager
def serve(protocol: str, preexec: Callable[[], None] | None = None) -> Iterator[Served]:
    proc = subprocess.Popen(
        [str(BIN), "serve", "--port", "0", "--protocol", protocol, "--param", "server_threads=1"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()  # the port, or "" if it exited
        assert line.strip().isdigit(), f"no port from the server: {line!r}"
        lines: queue.Queue[str | None] = queue.Queue()
        err = proc.stderr

        def pump() -> None:
            for text in err:
                lines.put(text)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        yield Served(proc, int(line), lines)
    finally:
        proc.kill()
        proc.wait()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=STEP_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"the server closed the connection after {len(data)} of {n} bytes"
        data += chunk
    return data


# Our protocol: a 10-byte header (body length u32, stream u32, opcode, flags; little-endian).
def timers_stats(stream: int) -> bytes:
    return struct.pack("<IIBB", 0, stream, 0x03, 0)


def timers_answer(sock: socket.socket) -> tuple[int, int, bytes]:
    length, stream, opcode, _ = struct.unpack("<IIBB", recv_exact(sock, 10))
    return stream, opcode, recv_exact(sock, length)


# CQL v4: version, flags, stream (i16), opcode, body length (u32); big-endian.
CQL_OPTIONS, CQL_QUERY = 0x05, 0x07
CQL_ERROR, CQL_SUPPORTED, CQL_RESULT = 0x00, 0x06, 0x08


def cql_frame(stream: int, opcode: int, body: bytes = b"") -> bytes:
    return struct.pack(">BBhBI", 0x04, 0, stream, opcode, len(body)) + body


def cql_query(stream: int, text: str) -> bytes:
    encoded = text.encode()
    # [long string] the query, [consistency] ONE, [byte] no flags.
    body = struct.pack(">i", len(encoded)) + encoded + struct.pack(">hB", 1, 0)
    return cql_frame(stream, CQL_QUERY, body)


def cql_header(sock: socket.socket) -> tuple[int, int, int]:
    version, _, stream, opcode, length = struct.unpack(">BBhBI", recv_exact(sock, 9))
    assert version == 0x84
    return stream, opcode, length


def answers_a_new_client(port: int, protocol: str) -> None:
    """A new connection gets the answer to one request."""
    with connect(port) as sock:
        if protocol == "cql":
            sock.sendall(cql_frame(7, CQL_OPTIONS))
            stream, opcode, length = cql_header(sock)
            assert (stream, opcode) == (7, CQL_SUPPORTED)
            recv_exact(sock, length)
        else:
            sock.sendall(timers_stats(7))
            stream, opcode, _ = timers_answer(sock)
            assert (stream, opcode) == (7, 0x83)


# Sent by a client that never reads: at most this much. Answered in full without a bound,
# it grew the server by ~50 MiB (our STATS) and ~220 MiB (CQL OPTIONS, 9 bytes each).
UNREAD_BYTES = 16 << 20
# The server's growth allowed: its queues' bounds are a few MiB.
RSS_GROWTH_KIB = 24 << 10
# No room to send for this long: the server has stopped reading (its queues are full). Only
# ends the sending early: the bound on the server's growth holds however much was sent.
BLOCKED_S = 3.0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_client_that_never_reads_cannot_grow_the_server(protocol: str) -> None:
    request = cql_frame(1, CQL_OPTIONS) if protocol == "cql" else timers_stats(1)
    chunk = request * ((64 << 10) // len(request))
    with serve(protocol) as server:
        answers_a_new_client(server.port, protocol)
        before = server.rss_kib()
        with connect(server.port) as sock:
            sock.setblocking(False)
            sent, blocked = 0, False
            while sent < UNREAD_BYTES:
                _, writable, _ = select.select([], [sock], [], BLOCKED_S)
                if not writable:
                    blocked = True
                    break
                sent += sock.send(chunk)
            grown = server.rss_kib() - before
            assert grown <= RSS_GROWTH_KIB, (
                f"the server grew {grown} KiB on {sent} bytes of unread {protocol} requests "
                f"(blocked: {blocked})"
            )
            # The stuck connection stops nobody else.
            answers_a_new_client(server.port, protocol)
        answers_a_new_client(server.port, protocol)
        assert server.rss_kib() - before <= RSS_GROWTH_KIB


def test_a_cql_answer_past_the_stated_limit_is_refused_with_an_error() -> None:
    with serve("cql") as server, connect(server.port) as sock:
        # 500 token sets, about 100 KiB of rows: over the 64 KiB limit.
        columns = ", ".join(["tokens"] * 500)
        sock.sendall(cql_query(3, f"SELECT {columns} FROM system.local"))
        stream, opcode, length = cql_header(sock)
        assert (stream, opcode) == (3, CQL_ERROR) and length < 2048
        body = recv_exact(sock, length)
        (code,) = struct.unpack(">i", body[:4])
        assert code == 0x2200
        assert b"would exceed the timers server's limit of 65536 bytes" in body
        # A 1 MiB statement (its prepared id would be as long) is refused before it is run.
        sock.sendall(cql_query(4, f"SELECT {', '.join(['tokens'] * 150_000)} FROM system.local"))
        stream, opcode, length = cql_header(sock)
        assert (stream, opcode) == (4, CQL_ERROR) and length < 2048
        assert b"the timers server takes at most 4096" in recv_exact(sock, length)
        # The connection goes on.
        sock.sendall(cql_query(5, "SELECT host_id FROM system.local"))
        stream, opcode, length = cql_header(sock)
        assert (stream, opcode) == (5, CQL_RESULT)


# The server's descriptors: ten or so are its own, the rest connections.
SERVER_NOFILE = 64
HELD = 100


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_server_out_of_descriptors_waits_and_serves_on(protocol: str) -> None:
    with serve(protocol, preexec=nofile(SERVER_NOFILE)) as server:
        with ExitStack() as held:
            for _ in range(HELD):
                held.enter_context(connect(server.port))
            lines = server.wait_stderr("cannot accept a connection")
            assert lines and "Too many open files" in lines[-1], lines
            assert server.proc.poll() is None, lines
        # Closed: their descriptors come back, and the server accepts again.
        answers_a_new_client(server.port, protocol)
        assert server.proc.poll() is None


def result_of(stdout: str) -> dict[str, Any]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    (result,) = [e for e in events if e.get("event") == "result"]
    assert isinstance(result, dict)
    return result


def test_a_timeout_tighter_than_sending_is_accounted_not_failed(
    timers_env: dict[str, str],  # noqa: F811 (the fixture)
) -> None:
    # 4096 requests in flight with a 2 ms timeout: the driver times many out before it
    # sends them, and the server never sees those.
    doc = run_timers(
        [
            "--strategies",
            "scylla-driver",
            "--param",
            "timeout_ms=2",
            "--duration-s",
            "1",
            "--warmup-s",
            "0.3",
            "--repeat",
            "1",
        ],
        timers_env,
    )
    assert doc["status"] == "complete"
    (cell,) = doc["cells"]
    assert cell["failures"] == []
    (r,) = cell["repeats"]
    assert r["issued"] == r["ok"] + r["timeouts"] + r["errors"] and r["unresolved"] == 0
    # What never reached the server is counted, and is among what timed out or failed;
    # every answered request reached it.
    assert r["unsent"] == r["issued"] - r["server_requests"]
    assert r["ok"] <= r["server_requests"] <= r["issued"]
    assert r["unsent"] <= r["timeouts"] + r["errors"]
    assert r["timeouts"] > 0


@pytest.mark.parametrize("strategy", ["none", "scylla-driver"])
def test_connections_beyond_the_descriptor_limit_are_refused_up_front(strategy: str) -> None:
    for verb in ("check", "run"):
        done = subprocess.run(
            [
                str(BIN),
                verb,
                *("--strategy", strategy, "--param", "connections=2000"),
                *("--duration-s", "1", "--warmup-s", "0"),
            ],
            capture_output=True,
            text=True,
            timeout=STEP_S,
            preexec_fn=nofile(1024),
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert line.startswith("error: connections=2000 needs "), line
        assert "the descriptor limit (RLIMIT_NOFILE, ulimit -n) is 1024" in line


@pytest.mark.parametrize("strategy", ["none", "scylla-driver"])
def test_the_connections_really_open_are_recorded(strategy: str) -> None:
    done = subprocess.run(
        [
            str(BIN),
            "run",
            "--strategy",
            strategy,
            *("--param", "connections=5", "--param", "concurrency=20"),
            *("--duration-s", "0.5", "--warmup-s", "0.1"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=nofile(1024),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = result_of(done.stdout)
    assert result["params"]["connections"] == 5
    assert result["connections_open"] == 5


def test_timer_ops_counts_answered_ops_per_second_as_the_served_scenarios() -> None:
    describe = json.loads(
        subprocess.run(
            [str(BIN), "describe"], capture_output=True, text=True, timeout=STEP_S, check=True
        ).stdout
    )
    (scenario,) = [s for s in describe["scenarios"] if s["name"] == "timer-ops"]
    assert "deadline-tracker does not run it" not in scenario["help"]
    assert "ops_per_sec and cpu_ns_per_op count the completed ops" in scenario["help"]
    # Completions 30 ms late against a 1 ms timeout: (nearly) every op times out.
    done = subprocess.run(
        [
            str(BIN),
            "run",
            "--strategy",
            "deadline-tracker",
            "--scenario",
            "timer-ops",
            *("--param", "timeout_ms=1", "--param", "service_time_us=30000"),
            *("--param", "concurrency=8", "--param", "threads=2"),
            *("--duration-s", "0.5", "--warmup-s", "0.1"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    r = result_of(done.stdout)
    assert r["timeouts"] > 0
    assert r["ops_per_sec"] * r["duration_s"] == pytest.approx(r["ok"], abs=1e-6)
    if r["ok"] == 0:
        assert "cpu_ns_per_op" not in r
    assert r["ns_per_op"] * (r["ok"] + r["timeouts"]) == pytest.approx(r["cpu_ns"])
