"""CPU placement (harness/cpuset.py): parsing, validation, the automatic split, and the pinning
of a real process's threads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cpuset import (
    PinningHooks,
    auto_split,
    cpu_text,
    header,
    parse_cpus,
    parse_cpuset,
    role_pids,
)
from harness.errors import BadInput

pytestmark = pytest.mark.unit
ROLES = ("client", "server")
ONLINE = list(range(32))


def test_cpu_lists_and_roles_parse_and_bad_ones_are_refused() -> None:
    assert parse_cpus("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert cpu_text([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    both = {"client": list(range(16)), "server": list(range(16, 32))}
    assert parse_cpuset(["client=0-15,server=16-31"], ROLES, ONLINE) == both
    assert parse_cpuset(["client=0-15", "server=16-31"], ROLES, ONLINE) == both
    assert parse_cpuset(["client=0,2,server=1"], ROLES, ONLINE) == {
        "client": [0, 2],
        "server": [1],
    }
    with pytest.raises(BadInput, match="unknown role 'db'"):
        parse_cpuset(["db=0"], ROLES, ONLINE)
    with pytest.raises(BadInput, match="CPU 32-33 not online"):
        parse_cpuset(["client=30-33"], ROLES, ONLINE)
    for bad in ("client", "client=", "client=a-b", "client=3-1"):
        with pytest.raises(BadInput):
            parse_cpuset([bad], ROLES, ONLINE)
    assert header(both) == "cpuset client=0-15 server=16-31"


def test_the_automatic_split_needs_8_cpus_and_roles_go_by_position() -> None:
    assert auto_split(list(range(4))) is None
    assert auto_split(list(range(8))) == {"client": [0, 1, 2, 3], "server": [4, 5, 6, 7]}
    assert role_pids([10, 11, 12], ROLES) == {"client": [10], "server": [11, 12]}
    assert role_pids([10], ROLES) == {"client": [10]}


def test_pinning_sets_every_thread_of_the_roles_processes(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, threading; t = threading.Thread(target=sys.stdin.readline); t.start();"
            " print('ready', flush=True); t.join()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        # The automatic split pins nothing when a role has no process.
        PinningHooks({"client": cpus[:1], "server": cpus[-1:]}, ROLES, None, True).on_ready(
            [child.pid]
        )
        assert os.sched_getaffinity(child.pid) == set(cpus)
        PinningHooks({"client": cpus[-1:]}, ROLES, None).on_ready([child.pid])
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        assert len(tids) == 2
        assert all(os.sched_getaffinity(tid) == {cpus[-1]} for tid in tids)
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=20)
