"""The inferno tools (crates.io `inferno`, installed pinned into <repo>/.tools by `make deps`):
perf script output to folded stacks, folded stacks to SVG flame graphs and differentials."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harness.base.writes import write_atomic
from harness.paths import REPO_ROOT

TOOLS_BIN = REPO_ROOT / ".tools" / "bin"
INSTALL_HINT = "make inferno"
RUN_TIMEOUT_S = 300.0


class InfernoError(RuntimeError):
    pass


def tool(name: str) -> Path | None:
    """<repo>/.tools/bin/NAME (what `make deps` installs), else NAME on PATH."""
    local = TOOLS_BIN / name
    if local.is_file() and os.access(local, os.X_OK):
        return local
    found = shutil.which(name)
    return Path(found) if found else None


def problem() -> str | None:
    """Why flame graphs cannot be drawn here, or None."""
    for name in ("inferno-collapse-perf", "inferno-flamegraph", "inferno-diff-folded"):
        if tool(name) is None:
            return f"{name} is not installed (run `{INSTALL_HINT}`)"
    return None


def _run(name: str, args: Sequence[str], stdin: bytes) -> bytes:
    binary = tool(name)
    if binary is None:
        raise InfernoError(f"{name} is not installed (run `{INSTALL_HINT}`)")
    try:
        done = subprocess.run(
            [str(binary), *args],
            input=stdin,
            capture_output=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise InfernoError(f"{name} took more than {RUN_TIMEOUT_S:g} s") from err
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise InfernoError(f"{name} exited with code {done.returncode}: {' '.join(tail)}")
    return done.stdout


def collapse_perf(perf_script_output: bytes) -> str:
    """Folded stacks, one root frame `comm-PID` per process; kernel frames marked `_[k]`."""
    return _run("inferno-collapse-perf", ["--all", "--pid"], perf_script_output).decode(
        errors="replace"
    )


def flamegraph(
    folded_text: str,
    out: Path,
    *,
    title: str,
    subtitle: str,
    countname: str = "samples",
    colors: str = "hot",
) -> None:
    """An SVG flame graph of the folded stacks, written atomically to `out`."""
    svg = _run(
        "inferno-flamegraph",
        [
            "--title",
            title,
            "--subtitle",
            subtitle,
            "--countname",
            countname,
            "--colors",
            colors,
            "--hash",
        ],
        folded_text.encode(),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, svg)


def diff_folded(baseline_text: str, candidate_text: str, workdir: Path) -> str:
    """`inferno-diff-folded --normalize BASELINE CANDIDATE`: the candidate's stacks with both
    weights, the baseline scaled to the candidate's total (first file = baseline)."""
    workdir.mkdir(parents=True, exist_ok=True)
    base, cand = workdir / ".diff-baseline.folded", workdir / ".diff-candidate.folded"
    base.write_text(baseline_text)
    cand.write_text(candidate_text)
    try:
        out = _run("inferno-diff-folded", ["--normalize", str(base), str(cand)], b"")
    finally:
        base.unlink(missing_ok=True)
        cand.unlink(missing_ok=True)
    return out.decode(errors="replace")
