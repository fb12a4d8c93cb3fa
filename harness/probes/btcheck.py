"""`bt:SCRIPT` probes checked with bpftrace's dry run (`-d`: parse, semantic analysis and code
generation, nothing loaded) before a run starts: a script bpftrace rejects is bad input."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.errors import BadInput
from harness.probes.availability import bpftrace_problem
from harness.probes.probe import ProbeSpec

DRY_RUN_TIMEOUT_S = 60
# Printed on every dry run of bpftrace 0.17, also a successful one: not the script's error.
_NOISE = ("RLIMIT_MEMLOCK", "available_filter_functions")


def check_scripts(specs: Sequence[ProbeSpec]) -> None:
    """BadInput with bpftrace's own message for the first script it rejects; nothing to check
    where bpftrace cannot run (the probe is then recorded as unavailable, with the reason)."""
    scripts = [spec.script for spec in specs if spec.script is not None]
    if not scripts or bpftrace_problem() is not None:
        return
    for script in scripts:
        problem = dry_run_problem(script)
        if problem is not None:
            raise BadInput(f"probe 'bt:{script}': bpftrace rejects the script: {problem}")


def dry_run_problem(script: Path) -> str | None:
    """bpftrace's error lines for `script` in one line, or None when it compiles."""
    try:
        done = subprocess.run(
            # Any pid will do for $1: nothing is attached.
            ["bpftrace", "-d", str(script), str(os.getpid())],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            timeout=DRY_RUN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"its dry run did not finish in {DRY_RUN_TIMEOUT_S} s"
    except OSError as err:
        return f"cannot start bpftrace: {err.strerror}"
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR" in line and not any(n in line for n in _NOISE)]
    return " ".join(errors or lines[-1:]) or f"bpftrace -d exited with code {done.returncode}"
