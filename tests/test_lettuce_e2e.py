"""The lettuce suite through the harness and on its own: the three strategies side by side,
redis-server started and always stopped (also when the launcher's JVM is killed), never a
server that took its port measured, no JVM perf map left in /tmp, and the gc probe on the
JVM agreeing with the JVM's own GC figures (GarbageCollectorMXBean).

Other pytest-xdist workers run redis-servers and JVMs too: the checks look only at the
processes this test started. Its JVMs carry its HARNESS_TEST_TAG in their environment and
name themselves in their GC log's file name (jvm-PID.log); each leads its repeat's session
(the harness starts the workload in a new one), which its redis-server keeps (redis-server
overwrites its environment with its process title: no tag there)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import HARNESS, run_harness, runs_dir
from requirements import need

from harness.catalog import unmet_requirements
from harness.paths import REPO_ROOT
from harness.probes.availability import bpftrace_problem, perf_problem
from harness.suites import Suite, discover

pytestmark = pytest.mark.e2e

WORKLOADS = REPO_ROOT / "workloads"
STRATEGIES = ("executor-expiry", "wheel-expiry", "no-timeout")
GONE_WITHIN_S = 15.0  # a safety net on a busy machine, not a measurement


def lettuce_suite() -> Suite:
    suite = discover(WORKLOADS)["lettuce"]
    unmet = unmet_requirements(suite)  # `make deps` installs them
    need(unmet and f"the lettuce suite cannot run here: {unmet}")
    if not suite.built or not (suite.folder / "bench" / "target" / "lettuce-bench.jar").is_file():
        pytest.fail("the lettuce workload is not built: run `make deps`")
    return suite


@pytest.fixture
def jvm_logs(tmp_path: Path) -> Path:
    """Where each JVM of the test writes its GC log, jvm-PID.log."""
    folder = tmp_path / "jvm-logs"
    folder.mkdir()
    return folder


@pytest.fixture
def lettuce_env(harness_env: dict[str, str], jvm_logs: Path) -> dict[str, str]:
    lettuce_suite()
    return {
        **harness_env,
        "HARNESS_WORKLOADS": str(WORKLOADS),
        "HARNESS_TEST_TAG": uuid.uuid4().hex,
        "LETTUCE_BENCH_JVM_OPTS": f"-Xlog:gc:file={jvm_logs}/jvm-%p.log",
    }


def jvms(logs: Path) -> set[int]:
    """The pids of the JVMs the test started, running or not (their GC logs' names)."""
    return {int(path.name.removeprefix("jvm-").removesuffix(".log")) for path in logs.iterdir()}


def dead(pid: int) -> bool:
    """Not running: gone, or a zombie nobody reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def wait_dead(pid: int) -> bool:
    deadline = time.monotonic() + GONE_WITHIN_S
    while not dead(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def tagged(env: dict[str, str]) -> set[int]:
    """The running processes this test started: they inherit its HARNESS_TEST_TAG."""
    marker = f"HARNESS_TEST_TAG={env['HARNESS_TEST_TAG']}".encode()
    found = set()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        pid = int(environ.parts[2])
        try:
            if marker in environ.read_bytes().split(b"\0") and not dead(pid):
                found.add(pid)
        except OSError:
            continue  # gone meanwhile
    return found


def redis_servers(sessions: set[int]) -> set[int]:
    """The running redis-servers in these sessions (those of the test's JVMs)."""
    found = set()
    for comm in Path("/proc").glob("[0-9]*/comm"):
        pid = int(comm.parts[2])
        try:
            if comm.read_text().strip() == "redis-server" and os.getsid(pid) in sessions:
                found.add(pid)
        except OSError:
            continue  # gone meanwhile
    return found


def run_lettuce(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str]:
    done = run_harness(["run", "lettuce", *args], env, timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(env).iterdir()
    doc: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    return doc, done.stdout


def test_three_strategies_side_by_side(lettuce_env: dict[str, str], jvm_logs: Path) -> None:
    args = ["--duration-s", "1", "--warmup-s", "0.5", "--repeat", "1", "--probes", "none"]
    doc, out = run_lettuce([*args, "--param", "threads=16"], lettuce_env)
    assert [c["strategy"] for c in doc["cells"]] == list(STRATEGIES)
    versions = {"executor-expiry": "6.3.1", "wheel-expiry": "6.3.2", "no-timeout": "6.3.2"}
    for cell in doc["cells"]:
        (repeat,) = cell["repeats"]
        assert repeat["lettuce_version"].startswith(versions[cell["strategy"]]), repeat
        assert repeat["ops"] == repeat["ok"] == repeat["issued"] > 0
        assert repeat["errors"] == repeat["timeouts"] == 0
        assert repeat["latency_ns"]["p50"] <= repeat["latency_ns"]["max"]
    assert "vs executor-expiry" in out
    assert len(jvms(jvm_logs)) >= 3  # a repeat's JVM a strategy
    assert not redis_servers(jvms(jvm_logs)), "redis-server left running"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_redis_server_dies_with_the_launcher(sig: signal.Signals) -> None:
    """The JVM started redis-server; killed at its gate (SIGTERM: its shutdown hook stops
    redis; SIGKILL: the kernel's parent-death signal does), it leaves no redis-server."""
    suite = lettuce_suite()
    proc = subprocess.Popen(
        [str(suite.binary), "run", "--strategy", "no-timeout", "--duration-s", "30", "--gate"],
        cwd=suite.folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready", ready
        jvm, redis = ready["pids"]
        assert jvm == proc.pid
        assert Path(f"/proc/{redis}/comm").read_text().strip() == "redis-server"
        os.kill(jvm, sig)
        proc.wait(timeout=GONE_WITHIN_S)
        assert wait_dead(redis), f"redis-server {redis} still running after {sig.name}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_redis_server_stops_when_the_harness_is_stopped(lettuce_env: dict[str, str]) -> None:
    """SIGTERM to `harness run` in the middle of a repeat: the harness stops the workload,
    whose JVM stops its redis-server on the way out."""
    args = ["run", "lettuce", "--strategies", "no-timeout", "--repeat", "1", "--probes", "none"]
    harness = subprocess.Popen(
        [*HARNESS, *args, "--duration-s", "120", "--warmup-s", "0"],
        env=lettuce_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (started := redis_servers(tagged(lettuce_env))):
            assert harness.poll() is None, harness.communicate()[1]
            assert time.monotonic() < deadline, "no redis-server started"
            time.sleep(0.1)
        harness.send_signal(signal.SIGTERM)
        assert harness.wait(timeout=60) == 130
        for pid in started:
            assert wait_dead(pid), f"redis-server {pid} still running after the harness stopped"
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


# A `redis-server` first on PATH that takes the port the launcher tells redis-server to use
# (bound with SO_REUSEADDR, as a racing server can), serves it as a fake redis that logs each
# command's name, and execs the real redis-server only once the fake has answered a first
# request: the launcher always meets the fake while its own child runs, and the real
# redis-server then finds the port taken.
FAKE_REDIS = """#!{python}
import os, socket, sys, threading

REAL, LOG = {real!r}, {log!r}
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(64)
answered_r, answered_w = os.pipe()
if os.fork() > 0:
    listener.close()
    os.close(answered_w)
    os.read(answered_r, 1)  # EOF once the fake has answered (or died)
    os.execv(REAL, [REAL, *args])
os.close(answered_r)
log = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
first = threading.Lock()


def command(f):
    head = f.readline()
    if not head.startswith(b"*"):  # an inline command (PING, INFO server)
        return head.split()
    words = []
    for _ in range(int(head[1:])):
        size = int(f.readline()[1:])
        words.append(f.read(size + 2)[:-2])
    return words


def serve(conn):
    f = conn.makefile("rb")
    while words := command(f):
        name = words[0].upper()
        os.write(log, name + b"\\n")
        if name == b"PING":
            reply = b"+PONG\\r\\n"
        elif name == b"INFO":
            text = f"# Server\\r\\nprocess_id:{{os.getpid()}}\\r\\ntcp_port:{{port}}\\r\\n".encode()
            reply = b"$%d\\r\\n%s\\r\\n" % (len(text), text)
        elif name == b"HELLO":  # lettuce falls back to RESP2
            reply = b"-ERR unknown command 'HELLO'\\r\\n"
        else:
            reply = b"+OK\\r\\n"
        conn.sendall(reply)
        if first.acquire(blocking=False):
            os.close(answered_w)


while True:
    threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()
"""


def test_a_server_that_takes_the_port_is_never_measured(
    lettuce_env: dict[str, str], jvm_logs: Path, tmp_path: Path
) -> None:
    """A server bound to redis-server's port between the launcher's choice of the port and
    redis-server's own bind: the launcher sees it is not its child (INFO server's
    process_id) and fails the repeat saying so; no SET of the run reaches it."""
    real = shutil.which("redis-server")
    assert real is not None
    log = tmp_path / "fake-redis.log"
    log.touch()
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "redis-server"
    shim.write_text(FAKE_REDIS.format(python=sys.executable, real=real, log=str(log)))
    shim.chmod(0o755)
    env = {**lettuce_env, "PATH": f"{shim_dir}:{lettuce_env['PATH']}"}
    args = ["--strategies", "no-timeout", "--repeat", "2", "--probes", "none"]
    done = run_harness(
        ["run", "lettuce", *args, "--duration-s", "1", "--warmup-s", "0.5"], env, timeout=300
    )
    commands = log.read_text().split()
    assert "SET" not in commands, f"{commands.count('SET')} SETs measured the fake server"
    assert commands, "the fake server was never asked: the port race was not reproduced"
    assert done.returncode == 1, done.stderr
    (run_dir,) = runs_dir(env).iterdir()
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["status"] == "failed"
    (cell,) = doc["cells"]
    assert cell["repeats"] == []
    assert [f["repeat"] for f in cell["failures"]] == [1, 2]
    for failure in cell["failures"]:
        tail = "\n".join(failure["stderr_tail"])
        assert "not by the redis-server started here" in tail, tail
    assert not tagged(env), "the fake server outlived the run"
    assert not redis_servers(jvms(jvm_logs)), "redis-server left running"


@pytest.mark.parametrize("probes", ["none", pytest.param("oncpu", marks=pytest.mark.bpf)])
def test_no_perf_map_outlives_the_run(
    probes: str, lettuce_env: dict[str, str], jvm_logs: Path
) -> None:
    """Each run JVM writes /tmp/perf-PID.map (for perf's Java frames); the harness removes the
    maps of the JVMs it started once the repeat's probes are done, and the oncpu flame graph
    still names Java frames. The JVMs' pids: each writes its GC log to jvm-PID.log."""
    if probes == "oncpu":
        need(perf_problem())
    args = ["--strategies", "no-timeout", "--probes", probes, "--repeat", "2"]
    if probes == "oncpu":  # perf samples on explain repeats only: as many of them, for frames
        args += ["--explain-repeats", "2"]
    doc, _ = run_lettuce([*args, "--duration-s", "1", "--warmup-s", "0.5"], lettuce_env)
    (cell,) = doc["cells"]
    assert len(cell["repeats"]) == 2
    pids = jvms(jvm_logs)
    assert len(pids) >= 2, pids  # the repeats' JVMs (and those of describe/check)
    left = [path for pid in pids if (path := Path(f"/tmp/perf-{pid}.map")).exists()]
    assert not left, f"perf maps left behind: {left}"
    if probes == "oncpu":
        (run_dir,) = runs_dir(lettuce_env).iterdir()
        folded = (run_dir / "folded" / "no-timeout.oncpu.folded").read_text()
        # Only the map names a JIT-compiled method (`void io.netty....flush0_[j]`); without it
        # those frames are [unknown]. Which methods a 99 Hz sample of 2 s lands in is chance:
        # io.lettuce.core frames were missing from one CI run's folded stacks, so any named
        # Java method counts, and the failure shows how many samples each thread got.
        methods = re.findall(r"[\w$]+(?:\.[\w$]+)+\.[\w$<>]+_\[j\]", folded)
        assert methods, per_thread_samples(folded)


@pytest.mark.bpf
def test_gc_probe_agrees_with_the_jvm(lettuce_env: dict[str, str]) -> None:
    """A small young generation makes the JVM collect several times a second: the gc probe's GC
    cycles and GC time (gc__begin to gc__end) over the window against the JVM's own
    collections and collection time over the workload's window, with the Go gc probe's
    tolerances (5% or 3 cycles, 10% of the time) plus the beans' resolution of 1 ms a
    collection; the GC pauses (the safepoints the GCs ran in, the time to reach them
    included) are at least the GC time. The two windows open and close a signal apart: a
    collection in between counts on one side only.

    gc__begin and gc__end (HotSpot's SvcGCMarker) enclose the scope the beans time
    (TraceMemoryManagerStats): the pause's set-up and tear-down around that scope count on
    the probe's side only. On a busy machine a VM thread preempted there stretches one
    collection by milliseconds the JVM does not count (5 ms of 20 in one CI run), so the
    probe may exceed the JVM by up to one pause more, and never fall short of it."""
    need(bpftrace_problem())
    need(perf_problem())
    env = {
        **lettuce_env,
        "LETTUCE_BENCH_JVM_OPTS": f"{lettuce_env['LETTUCE_BENCH_JVM_OPTS']} -Xmn8m",
    }
    args = ["--strategies", "no-timeout", "--probes", "gc,oncpu", "--repeat", "2"]
    doc, out = run_lettuce([*args, "--duration-s", "3", "--warmup-s", "1"], env)
    # The same run's on-CPU profile has Java frames by name (frame pointers kept, perf map).
    (run_dir,) = runs_dir(env).iterdir()
    folded = (run_dir / "folded" / "no-timeout.oncpu.folded").read_text()
    assert "io.lettuce.core" in folded and "_[j]" in folded, folded[:2000]
    (cell,) = doc["cells"]
    gc = cell["probes"]["gc"]
    assert "unavailable" not in gc and "error" not in gc, gc
    assert all(r["script"].endswith("-gc.bt") for r in gc["repeats"]), gc  # the JVM's part ran
    assert "GC pause" in out
    for repeat in cell["repeats"]:
        jvm = repeat["jvm_gc"]
        collections = jvm["collections"]
        assert collections >= 2, jvm  # 8 MiB of young generation fills many times in 3 s
        cycles = repeat["gc_cycles"]
        assert abs(cycles - collections) <= max(3, 0.05 * collections), (cycles, jvm)
        pause = repeat["gc_pause_ns"]
        assert pause["count"] == cycles
        assert 0 < pause["max"] <= pause["total"]
        gc_ns = repeat["jvm_gc_time_ns"]
        assert 0 < gc_ns <= pause["total"], (gc_ns, pause)
        jvm_ns = jvm["time_ms"] * 1e6
        longest = max(pause["max"], jvm["max_ms"] * 1e6 + 1e6)
        slack = 0.10 * jvm_ns + 1e6 * collections + abs(cycles - collections) * longest
        assert jvm_ns - slack <= gc_ns <= jvm_ns + slack + pause["max"], (gc_ns, pause, jvm)


def per_thread_samples(folded: str) -> dict[str, int]:
    """Samples per thread name in folded stacks (`thread;frame;... count` lines)."""
    samples: Counter[str] = Counter()
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        samples[stack.split(";", 1)[0]] += int(count)
    return dict(samples.most_common())
