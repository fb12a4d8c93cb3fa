"""The workload contract (docs/workload-contract.md), checked on every suite the tests know of:
the repo's workloads, the fixture suites (one in JavaScript, tests/fixtures/more-suites, one
with a scratch file, tests/fixtures/scratch-suites, one of contract version 1, without `check`,
tests/fixtures/v1-suites), the example of docs/adding-a-suite.md and any suite on
HARNESS_SUITES_PATH (so that you can check your own). Each check starts the suite's binary
directly, as the harness does; a suite with [scratch] gets its HARNESS_SCRATCH_FILE."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import FIXTURES
from product_text import issue_refs
from readme_example import example_name, write_example
from requirements import need

from harness.base.stop import StopFlag
from harness.catalog import find_suites, unmet_requirements
from harness.describe import (
    CONTRACT_VERSIONS,
    PARAM_TYPES,
    Description,
    ParamSpec,
    parse_description,
    run_binary,
)
from harness.paths import REPO_ROOT, suites_path
from harness.run import scratch
from harness.suites import Suite, load_suite

pytestmark = pytest.mark.e2e

KNOWN = find_suites(
    REPO_ROOT / "workloads",
    [
        FIXTURES,
        FIXTURES / "more-suites",
        FIXTURES / "scratch-suites",
        FIXTURES / "v1-suites",
        *suites_path(),
    ],
).suites
NAMES = list(dict.fromkeys([*KNOWN, example_name()]))
WINDOW = ["--duration-s", "0.3", "--warmup-s", "0"]  # short runs: two cores, many suites
DEADLINE_S = 120.0  # a safety net against a hung workload, not a measurement
# read(2)'s number, as /proc/<tid>/syscall shows the call a blocked thread is in.
READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Suite]:
    if example_name() in KNOWN:  # a suite of that name on HARNESS_SUITES_PATH comes first
        return KNOWN
    example = write_example(tmp_path_factory.mktemp("suites"))
    return {**KNOWN, example_name(): load_suite(example / "suite.toml")}


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    """Each suite's describe document, filled in by `describe_doc` once per suite."""
    return {}


@pytest.fixture(scope="module")
def scratch_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the scratch files of the suites with [scratch] are written, once each."""
    folder = tmp_path_factory.mktemp("scratch")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=NAMES)
def suite(
    request: pytest.FixtureRequest,
    suites: dict[str, Suite],
    documents: dict[str, dict[str, Any]],
    scratch_folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Suite:
    chosen = suites[request.param]
    unmet = unmet_requirements(chosen)  # suite.toml `requires`; `make deps` installs them
    need(unmet and f"suite {chosen.name} cannot run here: {unmet}")
    if not chosen.built:
        pytest.fail(f"suite {chosen.name}: {chosen.binary} is not built: run `make deps`")
    if chosen.scratch is not None:  # as the harness gives it: a file of the default size
        path = scratch_file(chosen, describe_doc(chosen, documents), scratch_folder)
        monkeypatch.setenv(scratch.ENV, str(path))
    return chosen


def scratch_file(suite: Suite, doc: dict[str, Any], folder: Path) -> Path:
    """The suite's scratch file at its size parameter's default, written once."""
    assert suite.scratch is not None
    [size] = [p["default"] for p in doc["params"] if p["name"] == suite.scratch.size_param]
    path = folder / f"{suite.name}-data-{size}m"
    if not path.exists():
        assert scratch.write_file(
            path, size * scratch.MIB, StopFlag(), scratch.File(folder, size, False)
        )
    return path


def describe_doc(suite: Suite, documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if suite.name not in documents:
        done = run_binary(suite, ["describe"], "describe")
        assert done.returncode == 0, done.stderr
        documents[suite.name] = json.loads(done.stdout)
    return documents[suite.name]


@pytest.fixture
def description(suite: Suite, documents: dict[str, dict[str, Any]]) -> Description:
    return parse_description(describe_doc(suite, documents), suite.name)


class Workload:
    """One `<bin> run`, started as the harness starts it: its own session, stdin a pipe that
    the test writes the gate line to (or leaves open), stdout read line by line."""

    def __init__(self, suite: Suite, args: list[str], stderr: IO[bytes]) -> None:
        self.stderr = stderr
        self.started_ns = time.time_ns()
        self.proc = subprocess.Popen(
            [str(suite.binary), "run", *args],
            cwd=suite.folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.pending = b""
        self.eof = False
        self.deadline = time.monotonic() + DEADLINE_S

    def _read(self, timeout: float) -> list[str]:
        """Complete lines that arrive within `timeout` (0: only those already written)."""
        if self.eof or not self.selector.select(timeout):
            return []
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        if not chunk:
            self.eof = True
            rest, self.pending = self.pending, b""
            return [rest.decode()] if rest else []
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        return [line.decode() for line in lines]

    def written(self) -> list[str]:
        """Every line the workload has written so far, without waiting for more."""
        lines: list[str] = []
        while batch := self._read(0):
            lines += batch
        return lines

    def next_lines(self) -> list[str]:
        """Wait for the next lines, or the end of stdout ([])."""
        while not self.eof:
            left = self.deadline - time.monotonic()
            assert left > 0, f"no line from the workload within {DEADLINE_S:g} s"
            if lines := self._read(min(left, 1.0)):
                return lines
        return []

    def until(self, name: str) -> list[str]:
        """Lines up to and including the first event `name`."""
        lines: list[str] = []
        while not any(event_name(line) == name for line in lines):
            more = self.next_lines()
            assert more, f"stdout ended before '{name}': {lines}"
            lines += more
        return lines

    def open_gate(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.close()

    def finish(self) -> tuple[int, list[str], str]:
        """Read stdout to its end and wait for the exit: (exit code, lines, stderr)."""
        lines: list[str] = []
        while more := self.next_lines():
            lines += more
        code = self.proc.wait(timeout=max(self.deadline - time.monotonic(), 1.0))
        self.stderr.seek(0)
        return code, lines, self.stderr.read().decode()

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        self._remove_perf_map()

    def _remove_perf_map(self) -> None:
        """A JVM run by hand (lettuce-bench execs it: same pid) leaves /tmp/perf-PID.map for
        perf; under the harness it is removed after the repeat, here after the test."""
        path = Path(f"/tmp/perf-{self.proc.pid}.map")
        with contextlib.suppress(FileNotFoundError):
            info = path.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_mtime_ns >= self.started_ns:
                path.unlink()


@contextlib.contextmanager
def started(suite: Suite, args: list[str]) -> Iterator[Workload]:
    with tempfile.TemporaryFile() as stderr:
        workload = Workload(suite, args, stderr)
        try:
            yield workload
        finally:
            workload.close()


def event(line: str) -> dict[str, Any] | None:
    """A stdout line as the harness reads it: a JSON object with `event`, else None."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and "event" in value else None


def event_name(line: str) -> str | None:
    parsed = event(line)
    return None if parsed is None else str(parsed["event"])


def events(lines: list[str]) -> list[str]:
    return [name for line in lines if (name := event_name(line)) is not None]


def baseline_args(description: Description) -> list[str]:
    strategy = description.baseline or description.strategy_names[0]
    return ["--strategy", strategy, "--scenario", description.default_scenario]


def parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])  # after "pid (comm) state"


def descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        pid = parent(pid)
    return False


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def reading_stdin(pids: list[int]) -> bool:
    """Whether a thread of these processes is blocked in read(2) on fd 0."""
    wanted = [READ_SYSCALL[platform.machine()], "0x0"]
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # it ended meanwhile
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    if (task / "syscall").read_text().split()[:2] == wanted:
                        return True
    return False


def lookup(result: dict[str, Any], dotted: str) -> object:
    value: object = result
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def test_describe_has_the_contract_shape(
    suite: Suite, documents: dict[str, dict[str, Any]]
) -> None:
    doc = describe_doc(suite, documents)
    description = parse_description(doc, suite.name)  # strategies, scenarios, params, metrics
    assert doc["suite"] == suite.name and doc["contract_version"] in CONTRACT_VERSIONS
    if suite.folder.is_relative_to(REPO_ROOT / "workloads"):  # the repo's own have `check`
        assert doc["contract_version"] == 2
    assert issue_refs(json.dumps(doc)) == [], "describe's text names an issue"
    assert doc["baseline"] in description.strategy_names
    for strategy in doc["strategies"]:
        assert isinstance(strategy.get("help"), str), strategy
    for param in doc["params"]:
        assert param["type"] in PARAM_TYPES and isinstance(param.get("help"), str), param
        assert "default" in param, param
        if param["type"] in ("int", "float"):
            bounds = [param[key] for key in ("min", "max") if key in param]
            assert all(is_number(b) for b in bounds), param
            assert bounds == sorted(bounds), param
        if param["type"] == "choice":
            assert param["default"] in param["choices"], param
    for scenario in description.scenarios:
        for name, value in scenario.params.items():
            assert description.params[name].coerce(value) == value, (scenario.name, name)
    assert doc["metrics"], "no metrics"
    for metric in doc["metrics"]:
        assert isinstance(metric.get("unit"), str), metric
        assert metric.get("better", "higher") in ("higher", "lower"), metric
        assert isinstance(metric.get("headline", False), bool), metric
        assert isinstance(metric.get("label", ""), str), metric


def test_a_gated_run_waits_for_its_line_then_keeps_the_event_order(
    suite: Suite, description: Description
) -> None:
    if platform.machine() not in READ_SYSCALL:
        pytest.skip(f"read(2)'s syscall number on {platform.machine()} is not in the table")
    with started(suite, [*baseline_args(description), *WINDOW, "--gate"]) as workload:
        before = workload.until("ready")
        ready = next(e for line in before if (e := event(line)) and e["event"] == "ready")
        pids = ready["pids"]
        assert pids and all(isinstance(p, int) and p > 0 for p in pids), ready
        assert all(descends_from(p, workload.proc.pid) for p in pids), (pids, workload.proc.pid)
        # The gate is closed: wait until the workload blocks reading it, then nothing it has
        # written may be past `ready`.
        while not reading_stdin([workload.proc.pid, *pids]):
            assert workload.proc.poll() is None, "exited at the closed gate"
            assert time.monotonic() < workload.deadline, "never read the gate line"
            time.sleep(0.01)
        assert events(before + workload.written()) == ["ready"]
        workload.open_gate()
        code, after, stderr = workload.finish()
    assert code == 0, stderr
    assert events(after) == ["measure_start", "measure_end", "result"]
    last = [line for line in after if line.strip()][-1]
    result = event(last)
    assert result is not None and result["event"] == "result", f"not last: {after}"
    strategy, scenario = baseline_args(description)[1::2]
    assert (result["strategy"], result["scenario"]) == (strategy, scenario)
    assert set(result["params"]) == set(description.params)
    for metric in description.metrics:
        assert is_number(lookup(result, metric["name"])), metric["name"]
    for plot in description.plots:  # what the plots draw is in the result
        assert all(series.name in result for series in plot.series), plot.name
    assert not any(running(p) for p in pids), "processes left behind"


def int_spellings(value: int) -> list[str]:
    """8 as 8, 8.0, 80e-1 and 0.8e1: an integral value in JSON-number spellings."""
    sign, digits = ("-" if value < 0 else ""), str(abs(value))
    return [str(value), f"{value}.0", f"{value * 10}e-1", f"{sign}0.{digits}e{len(digits)}"]


def float_spellings(value: float) -> list[str]:
    """0.25 as 0.25, 2.500000e-01, 0.25E+0 and 0.25000000000000000; 100.0 also as 100."""
    last = str(int(value)) if value.is_integer() else f"{value:.17g}"
    return [repr(value), f"{value:e}", f"{value!r}E+0", last]


def first(description: Description, kind: str) -> ParamSpec | None:
    return next((p for p in description.params.values() if p.type == kind), None)


def test_every_json_spelling_of_a_value_is_taken_without_a_gate(
    suite: Suite, description: Description
) -> None:
    """Four runs, each with the first int, float and bool parameter spelt differently, at the
    values the scenario gives them (true and false in turn for the bool). stdin stays open
    and unwritten: without --gate nothing waits for it."""
    values = description.scenario(description.default_scenario).params
    rounds: list[dict[str, tuple[str, object]]] = [{}, {}, {}, {}]
    number = first(description, "int")
    if number is not None:
        value = int(values.get(number.name, number.default))
        for spelt, text in zip(rounds, int_spellings(value), strict=True):
            spelt[number.name] = (text, value)
    real = first(description, "float")
    if real is not None:
        value_f = float(values.get(real.name, real.default))
        for spelt, text in zip(rounds, float_spellings(value_f), strict=True):
            spelt[real.name] = (text, value_f)
    flag = first(description, "bool")
    if flag is not None:
        for i, spelt in enumerate(rounds):
            spelt[flag.name] = ("true", True) if i % 2 == 0 else ("false", False)
    if not rounds[0]:
        pytest.skip(f"suite {suite.name} has no int, float or bool parameter")
    for spelt in rounds:
        params = [arg for name, (text, _) in spelt.items() for arg in ("--param", f"{name}={text}")]
        with started(suite, [*baseline_args(description), *params, *WINDOW]) as workload:
            code, lines, stderr = workload.finish()
        assert code == 0, f"{params}: {stderr}"
        result = event([line for line in lines if line.strip()][-1])
        assert result is not None and result["event"] == "result", lines
        for name, (text, want) in spelt.items():
            got = result["params"][name]
            # JSON has one number type: a float parameter may come back as 100 for 100.0.
            same_type = is_number(got) if isinstance(want, float) else type(got) is type(want)
            assert got == want and same_type, f"{name}={text} read as {got!r}"


def bad_values(spec: ParamSpec, value: object) -> list[str]:
    """Spellings the contract rejects for `spec`, whatever its range."""
    if spec.type == "int":
        return ["abc", f"{value}.5", "0x10", f"+{value}", "1_000", f"{value}.", "inf", ""]
    if spec.type == "float":
        assert is_number(value)
        return ["fast", "nan", "inf", ".5", f"{int(value)}.", "+1", "0x1p-1", "1e400"]
    if spec.type == "bool":
        return ["yes", "1", "True", ""]
    if spec.type == "choice":
        return ["no-such-choice"]
    return []  # a string: the workload's own rules


def out_of_range(spec: ParamSpec) -> list[str]:
    values: list[str] = []
    for bound, step in ((spec.min, -1), (spec.max, 1)):
        if bound is None:
            continue
        beyond = bound + step
        if beyond != bound:  # a float too large to step past is left out
            values.append(str(int(beyond)) if spec.type == "int" else repr(float(beyond)))
    return values


BAD_INPUT_KINDS = [
    "unknown strategy",
    "unknown scenario",
    "unknown parameter",
    "bad value",
    "out of range",
]


def bad_inputs(
    kind: str, suite: Suite, description: Description
) -> list[tuple[list[str], str, list[str]]]:
    """(arguments, the bad input, the valid choices the message must name) for one kind; the
    test is skipped when the suite has no parameter that can be of this kind."""
    args = baseline_args(description)
    scenario = description.scenario(description.default_scenario)
    if kind == "unknown strategy":
        bad = "no-such-strategy"
        return [(["--strategy", bad, *args[2:]], bad, description.strategy_names)]
    if kind == "unknown scenario":
        bad = "no-such-scenario"
        valid = [s.name for s in description.scenarios]
        return [([*args[:2], "--scenario", bad], bad, valid)]
    if kind == "unknown parameter":
        return [([*args, "--param", "no_such_param=1"], "no_such_param", list(description.params))]
    cases = []
    for spec in description.params.values():
        value = scenario.params.get(spec.name, spec.default)
        texts = bad_values(spec, value) if kind == "bad value" else out_of_range(spec)
        cases += [([*args, "--param", f"{spec.name}={text}"], text, []) for text in texts]
    if not cases:
        pytest.skip(f"suite {suite.name} has no parameter that can be {kind}")
    return cases


@pytest.mark.parametrize("kind", BAD_INPUT_KINDS)
def test_bad_input_exits_2_with_one_line_before_set_up(
    kind: str, suite: Suite, description: Description
) -> None:
    for args, bad, valid in bad_inputs(kind, suite, description):
        with started(suite, [*args, *WINDOW]) as workload:
            code, lines, stderr = workload.finish()
        assert code == 2, f"{args}: exit {code}"
        assert events(lines) == [], f"{args}: started anyway"
        assert len(stderr.splitlines()) == 1 and stderr.strip(), f"{args}: stderr {stderr!r}"
        assert bad in stderr and all(name in stderr for name in valid), f"{args}: {stderr}"


def test_a_run_without_its_scratch_file_exits_2_with_one_line(
    suite: Suite, description: Description, monkeypatch: pytest.MonkeyPatch
) -> None:
    if suite.scratch is None:
        pytest.skip(f"suite {suite.name} has no [scratch] in its suite.toml")
    monkeypatch.delenv(scratch.ENV)
    with started(suite, [*baseline_args(description), *WINDOW]) as workload:
        code, lines, stderr = workload.finish()
    assert code == 2 and events(lines) == [], f"exit {code}: {lines}"
    assert len(stderr.splitlines()) == 1 and f"{scratch.ENV} is not set" in stderr, stderr


def check(
    suite: Suite, description: Description, args: list[str]
) -> subprocess.CompletedProcess[str]:
    if not description.has_check:
        pytest.skip(f"suite {suite.name} keeps contract version 1, which has no `check`")
    return run_binary(suite, ["check", *args], "check")


def test_check_accepts_what_run_accepts_and_starts_nothing(
    suite: Suite, description: Description
) -> None:
    done = check(suite, description, [*baseline_args(description), *WINDOW])
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("kind", BAD_INPUT_KINDS)
def test_check_rejects_what_run_rejects_with_its_one_line(
    kind: str, suite: Suite, description: Description
) -> None:
    for args, bad, valid in bad_inputs(kind, suite, description):
        done = check(suite, description, [*args, *WINDOW])
        assert done.returncode == 2 and done.stdout == "", f"{args}: {done}"
        assert len(done.stderr.splitlines()) == 1, f"{args}: stderr {done.stderr!r}"
        assert bad in done.stderr and all(name in done.stderr for name in valid), done.stderr
