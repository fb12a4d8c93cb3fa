"""fio-bench: the fio suite's executable (docs/workload-contract.md): describe, check, run."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from fio_suite import confine, jobfiles, json_plus, params
from fio_suite.launch import Fio, RunError, fio_command

SCRATCH_ENV = "HARNESS_SCRATCH_FILE"
SNAPSHOT_TIMEOUT_S = 10.0
STOP_GRACE_S = 10.0
# fio's own runtime: a safety net only, the wrapper stops fio itself after the window.
RUNTIME_MARGIN_S = 30.0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise params.BadInput(f"error: {message}")


@dataclass(frozen=True)
class Request:
    strategy: str
    scenario: str
    params: params.Params
    duration_s: float
    warmup_s: float
    gate: bool
    job_file: Path


def parse_args(argv: Sequence[str]) -> tuple[str, Request | None]:
    parser = _Parser(prog="fio-bench", add_help=False)
    parser.add_argument("command", choices=["describe", "check", "run"])
    parser.add_argument("--strategy")
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--param", action="append", default=[])
    parser.add_argument("--duration-s", type=str)
    parser.add_argument("--warmup-s", type=str, default="0")
    parser.add_argument("--gate", action="store_true")
    ns = parser.parse_args(list(argv))
    if ns.command == "describe":
        return ns.command, None
    if ns.strategy is None:
        raise params.BadInput("error: --strategy is required")
    if ns.scenario != "default":
        raise params.BadInput(f"error: unknown scenario '{ns.scenario}' (valid: default)")
    parsed = params.parse_params(ns.param)
    duration = _seconds("--duration-s", ns.duration_s, positive=True)
    warmup = _seconds("--warmup-s", ns.warmup_s, positive=False)
    job_file = params.job_file_path(ns.strategy, parsed)
    return ns.command, Request(
        ns.strategy, ns.scenario, parsed, duration, warmup, ns.gate, job_file
    )


def _seconds(flag: str, text: str | None, positive: bool) -> float:
    if text is None:
        raise params.BadInput(f"error: {flag} is required")
    try:
        value = float(text)
    except ValueError:
        raise params.BadInput(f"error: {flag} {text}: not a number") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise params.BadInput(f"error: {flag} {text}: must be {'> 0' if positive else '>= 0'}")
    return value


def wrapper_options(request: Request, scratch: str) -> list[jobfiles.Option]:
    """The options appended to every job section: the parameters' fio options, then
    fio_options, then the wrapper's own (which nothing may set: params.RESERVED)."""
    for name, value in request.params.options.items():
        if any(char in confine.C_CNTRL for char in value):
            raise params.BadInput(f"error: --param {name}={value!r}: a control character")
        try:
            confine.check_line(f"{name}={value}")
        except confine.Refused as err:
            raise params.BadInput(f"error: --param {name}={value}: {err}") from None
    try:
        extra = jobfiles.parse_options(request.params.fio_options)
    except ValueError as err:
        raise params.BadInput(f"error: --param fio_options: {err}") from None
    for name, _ in extra:
        if confine.canonical(name) in params.RESERVED:
            raise params.BadInput(
                f"error: --param fio_options: {name} is set by the wrapper "
                f"(reserved: {', '.join(params.RESERVED)})"
            )
    runtime_ms = math.ceil((request.warmup_s + request.duration_s + RUNTIME_MARGIN_S) * 1000)
    own: list[jobfiles.Option] = [
        ("thread", None),
        ("filename", scratch),
        ("size", f"{request.params.file_size_mb}m"),
        ("time_based", "1"),
        ("runtime", f"{runtime_ms}ms"),
        ("ramp_time", "0"),
        ("unlink", "0"),
    ]
    return [*request.params.options.items(), *extra, *own]


def derived_job_file(request: Request, scratch: str) -> str:
    options = wrapper_options(request, scratch)
    try:
        return jobfiles.derive(request.job_file, options)
    except jobfiles.JobFileError as err:
        raise params.BadInput(f"error: {request.job_file}: {err}") from None


def fio_problem() -> str | None:
    return None if shutil.which("fio") else "fio is not installed (apt install fio)"


def check_with_fio(request: Request, scratch: str) -> str:
    """The derived job file, checked (jobfiles, confine) and parsed by fio
    (`--parse-only`, the job on its stdin: no file to leave behind): bad input (exit 2),
    with fio's own message if fio rejects it."""
    job = derived_job_file(request, scratch)
    engine = request.params.options.get("ioengine")
    if engine:
        _check_engine(engine)
    done = subprocess.run(
        ["fio", "--parse-only", "-"], input=job, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        said = [
            line.strip()
            for line in (done.stderr + done.stdout).splitlines()
            if line.strip() and "dropped" not in line
        ]
        message = " | ".join(said[:3]) or f"fio --parse-only exited with {done.returncode}"
        raise params.BadInput(f"error: fio rejects the job ({_what(request)}): {message}")
    return job


def _check_engine(engine: str) -> None:
    """fio --parse-only accepts any ioengine name; an unknown one only fails at run time."""
    done = subprocess.run(["fio", "--enghelp"], capture_output=True, text=True, check=False)
    engines = [line.strip() for line in done.stdout.splitlines()[1:] if line.strip()]
    if engines and engine not in engines:
        raise params.BadInput(
            f"error: --param ioengine={engine}: fio has no such engine "
            f"(valid: {', '.join(engines)})"
        )


def _what(request: Request) -> str:
    given = [f"{k}={v}" for k, v in request.params.options.items()]
    if request.params.fio_options:
        given.append(f"fio_options={request.params.fio_options}")
    return f"{request.job_file.name}{' with ' + ', '.join(given) if given else ''}"


def scratch_file(request: Request) -> str:
    path = os.environ.get(SCRATCH_ENV)
    if not path:
        raise params.BadInput(
            f"error: {SCRATCH_ENV} is not set: run this suite through the harness, or set it "
            f"to a file of file_size_mb ({request.params.file_size_mb}) MiB"
        )
    if not Path(path).is_file():
        raise params.BadInput(f"error: {SCRATCH_ENV}={path}: no such file")
    return str(Path(path).absolute())


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def run(request: Request) -> dict[str, Any]:
    """The run in a folder beside the scratch file: under the harness that is its per-run
    scratch folder, which the harness removes whatever becomes of the wrapper (SIGKILL too)."""
    scratch = scratch_file(request)
    job = check_with_fio(request, scratch)
    with tempfile.TemporaryDirectory(prefix="fio-bench-", dir=Path(scratch).parent) as tmp:
        work = Path(tmp)
        (work / "job.fio").write_text(job)
        return _measure(request, work)


def _measure(request: Request, work: Path) -> dict[str, Any]:
    """ready, gate, warm-up, the window between two fio snapshots, the result."""
    job = work / "job.fio"
    fio = Fio(fio_command(job, work / "fio.json"), work, work / "fio.json", work / "fio.err")
    try:
        emit({"event": "ready", "pids": [fio.pid]})
        if request.gate:
            sys.stdin.readline()
        fio.go(SNAPSHOT_TIMEOUT_S)
        started = time.monotonic()
        fio.sleep_until(started + request.warmup_s)
        first = _edge(fio, "measure_start", 1)
        fio.sleep_until(started + request.warmup_s + request.duration_s)
        last = _edge(fio, "measure_end", 2)
        fio.stop(STOP_GRACE_S)
    finally:
        fio.kill()
    if last.snapshot.job_errors:
        name, code = last.snapshot.job_errors[0]
        raise RunError(fio.failure(f"fio job {name} failed: {os.strerror(code)} (error {code})"))
    cpu = None
    if first.cpu_ns is not None and last.cpu_ns is not None:
        cpu = json_plus.CpuWindow(last.cpu_ns - first.cpu_ns, last.monotonic - first.monotonic)
    metrics = json_plus.window_metrics(first.snapshot, last.snapshot, cpu)
    return {
        "event": "result",
        "strategy": request.strategy,
        "scenario": request.scenario,
        "params": request.params.as_json(),
        **metrics,
        "snapshot_lag_ms": {"start": first.lag_ms(), "end": last.lag_ms()},
        "errors": len(last.snapshot.job_errors),
        "fio_version": last.snapshot.version,
    }


@dataclass(frozen=True)
class _Edge:
    """A window edge: when the wrapper emitted it, fio's CPU time then, fio's snapshot."""

    monotonic: float
    wall_ms: float
    cpu_ns: int | None
    snapshot: json_plus.Snapshot

    def lag_ms(self) -> float:
        """How long after the event fio took its snapshot (fio's ms wall clock)."""
        return max(self.snapshot.timestamp_ms - self.wall_ms, 0.0)


def _edge(fio: Fio, event: str, number: int) -> _Edge:
    cpu_ns = fio.cpu_ns()
    monotonic, wall_ms = time.monotonic(), time.time() * 1000
    emit({"event": event})
    return _Edge(monotonic, wall_ms, cpu_ns, fio.snapshot(number, SNAPSHOT_TIMEOUT_S))


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # finally blocks run: fio killed, the folder removed


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        command, request = parse_args(args)
        if request is None:
            emit(params.describe())
            return 0
        if problem := fio_problem():
            print(f"error: {problem}", file=sys.stderr)
            return 1
        signal.signal(signal.SIGTERM, _on_sigterm)
        if command == "check":
            check_with_fio(request, "scratch-file")  # a name only: fio opens no file here
            return 0
        emit(run(request))
        return 0
    except params.BadInput as err:
        print(str(err).replace("\n", " "), file=sys.stderr)
        return 2
    except (RunError, json_plus.FioOutputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
