"""What a test needs from this machine, and the one way to say so: `need(problem)`.

A test that needs something this machine may lack (a privilege, kernel BTF, a tool, a built
collector, a browser) calls `need()` with the problem, or None when there is none. Normally a
problem skips the test. With REQUIRE_BPF=1 (CI, `.ci/run`) or CI set it fails it instead: there
no eBPF, perf or browser test may skip, so a green run has run them all.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def strict() -> bool:
    """REQUIRE_BPF=1 or CI: a missing requirement is a failure, not a skip."""
    return os.environ.get("REQUIRE_BPF") == "1" or bool(os.environ.get("CI"))


def unmet(problem: str) -> NoReturn:
    """Skips the test for `problem`, or fails it where nothing may skip."""
    if strict():
        pytest.fail(f"REQUIRE_BPF=1 or CI is set, so this does not skip: {problem}")
    pytest.skip(problem)


def need(problem: str | None) -> None:
    """Nothing if `problem` is None; otherwise skips the test, or fails it (see strict())."""
    if problem is not None:
        unmet(problem)


def root_problem(why: str) -> str | None:
    return None if os.geteuid() == 0 else f"not root: needs root {why}"


def tool_problem(tool: str, package: str) -> str | None:
    return None if shutil.which(tool) else f"{tool} is not installed (apt install {package})"
