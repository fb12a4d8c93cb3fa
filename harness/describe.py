"""`<bin> describe`: what a workload offers (strategies, scenarios, parameters, metrics) and
how its results are shown (metric labels, plots)."""

from __future__ import annotations

import ast
import json
import math
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness import needs
from harness.charts.workload import CHARTS, PlotSpec, Series
from harness.errors import BadInput, HarnessError
from harness.params import ParamValue
from harness.suites import Suite

PARAM_TYPES = ("int", "float", "bool", "choice", "string")
_PLOT_NAME = re.compile(r"[A-Za-z0-9_-]+")  # part of a file name
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
# The number spellings of the workload contract: JSON numbers (RFC 8259), no `+`, `0x`, `_`,
# `.5`, `inf` or `nan`. Workloads parse them by the same rule (params.rs, params.go).
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_PLAIN_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
# Integral values spelt with a fraction or an exponent go through a double: exact within
# ±(2^53 - 1), beyond which only the plain spelling is accepted.
_MAX_SAFE = 2**53 - 1
DESCRIBE_TIMEOUT_S = 60
_SHOWN = 40  # characters of a bad value a message quotes
# docs/workload-contract.md, Versions: 1 = describe + run; 2 = describe + check + run.
CONTRACT_VERSIONS = (1, 2)


class DescribeError(HarnessError):
    """The binary's describe failed or broke the contract: a workload bug, not bad input."""


class UnknownContractVersion(ValueError):
    """A describe of a contract version this harness does not know (a newer one)."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str
    default: ParamValue
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()

    def valid_values(self) -> str:
        """The accepted values in a few words, for help tables and error messages."""
        if self.type == "choice":
            return ", ".join(self.choices)
        if self.type == "bool":
            return "true, false"
        if self.type == "string":
            return "any string"
        low = "" if self.min is None else plain_number(self.min)
        high = "" if self.max is None else plain_number(self.max)
        bounds = f" {low}..{high}" if low or high else ""
        return f"{self.type}{bounds}"

    def coerce(self, raw: object) -> ParamValue:
        """`raw` (a CLI string or a TOML value) as this parameter's type; ValueError says why."""
        value = self._typed(raw)
        if isinstance(value, int | float) and not isinstance(value, bool):
            too_low = self.min is not None and value < self.min
            if too_low or (self.max is not None and value > self.max):
                raise ValueError(f"{_shown(raw)} is out of range")
        if self.type == "choice" and value not in self.choices:
            raise ValueError(f"{_shown(raw)} is not a valid choice")
        return value

    def _typed(self, raw: object) -> ParamValue:
        text = raw.strip() if isinstance(raw, str) else None
        if self.type == "int":
            integer = _integer(raw if text is None else text)
            if integer is None:
                raise ValueError(f"{_shown(raw)} is not an integer")
            return integer
        if self.type == "float":
            number = _number(raw if text is None else text)
            if number is None:
                raise ValueError(f"{_shown(raw)} is not a finite number")
            return number
        if self.type == "bool":
            if isinstance(raw, bool):
                return raw
            if text is not None and text.lower() in _TRUE | _FALSE:
                return text.lower() in _TRUE
            raise ValueError(f"{_shown(raw)} is not a boolean")
        if not isinstance(raw, str):
            raise ValueError(f"{_shown(raw)} is not a string")
        return raw


def _shown(raw: object) -> str:
    """A bad value as a message quotes it: its repr, a long one cut short (a whole list
    pasted into one --param stays one readable line)."""
    text = repr(raw)
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 4]}...{text[-1]}"


def _number(raw: object) -> float | None:
    """A finite number from a JSON-number string, an int or a float; else None."""
    if isinstance(raw, str):
        number = float(raw) if _JSON_NUMBER.fullmatch(raw) else math.nan
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        number = float(raw)
    else:
        return None
    return number if math.isfinite(number) else None


def _integer(raw: object) -> int | None:
    """An integral value in any JSON-number spelling (8, 8.0, 1e3), an int, or an integral
    float (TOML 8.0); else None."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and _PLAIN_INTEGER.fullmatch(raw):
        return int(raw)
    number = _number(raw)
    if number is None or not number.is_integer() or abs(number) > _MAX_SAFE:
        return None
    return int(number)


def plain_number(number: float) -> str:
    """10.0 as "10", 0.25 as "0.25": for command lines and messages."""
    return str(int(number)) if float(number).is_integer() else repr(number)


@dataclass(frozen=True)
class Named:
    name: str
    help: str


@dataclass(frozen=True)
class Strategy(Named):
    # The strategy this one is compared with (its twin: the same client without the feature
    # under test) instead of the suite's baseline, when the run has it.
    compare_with: str | None = None


@dataclass(frozen=True)
class Scenario(Named):
    params: dict[str, ParamValue]


@dataclass(frozen=True)
class Description:
    suite: str
    baseline: str | None
    strategies: tuple[Strategy, ...]
    default_scenario: str
    scenarios: tuple[Scenario, ...]
    params: dict[str, ParamSpec]
    metrics: tuple[dict[str, Any], ...]
    plots: tuple[PlotSpec, ...] = ()
    needs: dict[str, ast.Expression] = field(default_factory=dict)  # harness/needs.py
    contract_version: int = 1

    @property
    def has_check(self) -> bool:
        """Whether the workload answers `<bin> check` (version 2 on)."""
        return self.contract_version >= 2

    @property
    def strategy_names(self) -> list[str]:
        return [s.name for s in self.strategies]

    @property
    def twins(self) -> dict[str, str]:
        """Strategy -> the strategy it is compared with instead of the baseline (its
        `compare_with`), for those that name one."""
        return {s.name: s.compare_with for s in self.strategies if s.compare_with is not None}

    def scenario(self, name: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        valid = ", ".join(s.name for s in self.scenarios)
        raise BadInput(f"unknown scenario '{name}' for suite '{self.suite}' (valid: {valid})")

    def param(self, name: str) -> ParamSpec:
        if name not in self.params:
            valid = ", ".join(self.params) or "none"
            raise BadInput(f"unknown parameter '{name}' for suite '{self.suite}' (valid: {valid})")
        return self.params[name]

    def coerce(self, name: str, raw: object) -> ParamValue:
        """A parameter value checked against describe; bad input names the valid values."""
        spec = self.param(name)
        try:
            return spec.coerce(raw)
        except ValueError as err:
            raise BadInput(
                f"bad value for parameter '{name}': {err} (valid: {spec.valid_values()})"
            ) from err


def run_binary(suite: Suite, args: Sequence[str], command: str) -> subprocess.CompletedProcess[str]:
    """`<bin> ARGS` in the suite's folder, its output captured as text; DescribeError naming
    `command` when it cannot start or does not finish in DESCRIBE_TIMEOUT_S."""
    try:
        return subprocess.run(
            [str(suite.binary), *args],
            cwd=suite.folder,
            capture_output=True,
            text=True,
            timeout=DESCRIBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise DescribeError(f"{command} did not finish in {DESCRIBE_TIMEOUT_S} s") from err
    except OSError as err:
        raise DescribeError(f"{command} could not start: {err.strerror}") from err


def describe(suite: Suite) -> Description:
    """Run `<bin> describe` and check its output against the contract."""
    return read_description(suite, describe_output(suite))


def describe_output(suite: Suite) -> str:
    """What `<bin> describe` prints; DescribeError when it fails."""
    command = f"`{suite.binary} describe`"
    done = run_binary(suite, ["describe"], command)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message on stderr"])[-1]
        raise DescribeError(f"{command} exited with code {done.returncode}: {last}")
    return done.stdout


def read_description(suite: Suite, output: str) -> Description:
    """The output of the suite's describe, checked against the contract."""
    command = f"`{suite.binary} describe`"
    try:
        data = json.loads(output)
    except json.JSONDecodeError as err:
        raise DescribeError(f"{command} printed invalid JSON: {err}") from err
    try:
        return parse_description(data, suite.name)
    except UnknownContractVersion as err:
        raise DescribeError(f"{command}: {err}") from err
    except ValueError as err:
        raise DescribeError(f"{command} broke the workload contract: {err}") from err


def parse_description(data: object, suite_name: str) -> Description:
    """Validate a describe document; ValueError names the offending field."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    version = _contract_version(data)
    strategies = tuple(
        _strategy(item, f"strategies[{i}]") for i, item in enumerate(_list(data, "strategies"))
    )
    if not strategies:
        raise ValueError("'strategies' is empty")
    _check_twins(strategies)
    params: dict[str, ParamSpec] = {}
    for i, item in enumerate(_list(data, "params", required=False)):
        spec = _param(item, f"params[{i}]")
        params[spec.name] = spec
    scenarios = tuple(
        _scenario(item, f"scenarios[{i}]", params)
        for i, item in enumerate(_list(data, "scenarios"))
    )
    names = [s.name for s in scenarios]
    default = data.get("default_scenario")
    if default not in names:
        raise ValueError(f"'default_scenario' {default!r} is not one of the scenarios {names}")
    metrics = tuple(_list(data, "metrics", required=False))
    for i, metric in enumerate(metrics):
        if not isinstance(metric, dict) or not isinstance(metric.get("name"), str):
            raise ValueError(f"metrics[{i}] needs a string 'name'")
        for key, kind in (("unit", str), ("better", str), ("headline", bool), ("label", str)):
            if key in metric and not isinstance(metric[key], kind):
                raise ValueError(f"metrics[{i}].{key} must be a {kind.__name__}")
    plots = tuple(
        _plot(item, f"plots[{i}]") for i, item in enumerate(_list(data, "plots", required=False))
    )
    if len({plot.name for plot in plots}) < len(plots):
        raise ValueError("'plots' names a plot twice")
    baseline = data.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise ValueError(f"'baseline' must be a strategy name, got {baseline!r}")
    return Description(
        suite=suite_name,
        baseline=baseline,
        strategies=strategies,
        default_scenario=str(default),
        scenarios=scenarios,
        params=params,
        metrics=metrics,
        plots=plots,
        needs=needs.parse(data["needs"]) if "needs" in data else {},
        contract_version=version,
    )


def _contract_version(data: Mapping[str, Any]) -> int:
    """The document's contract_version; a workload written before the key existed is 1."""
    version = data.get("contract_version", 1)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"'contract_version' must be an integer, got {version!r}")
    if version not in CONTRACT_VERSIONS:
        known = " and ".join(map(str, CONTRACT_VERSIONS))
        raise UnknownContractVersion(
            f"contract_version {version} is not one this harness knows (versions {known}, "
            "docs/workload-contract.md#versions); a workload of a newer contract needs a "
            "newer harness"
        )
    return version


def _list(data: Mapping[str, Any], key: str, *, required: bool = True) -> list[Any]:
    value = data.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise ValueError(f"'{key}' must be a list, got {value!r}")
    return value


def _named(item: object, where: str) -> Named:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise ValueError(f"{where} needs a non-empty string 'name'")
    return Named(name=item["name"], help=str(item.get("help", "")))


def _strategy(item: object, where: str) -> Strategy:
    named = _named(item, where)
    assert isinstance(item, dict)
    twin = item.get("compare_with")
    if twin is not None and (not isinstance(twin, str) or not twin):
        raise ValueError(f"{where}.compare_with must be a strategy name, got {twin!r}")
    return Strategy(name=named.name, help=named.help, compare_with=twin)


def _check_twins(strategies: Sequence[Strategy]) -> None:
    """Each `compare_with` names another strategy of the list."""
    names = [s.name for s in strategies]
    for i, strategy in enumerate(strategies):
        twin = strategy.compare_with
        if twin is None:
            continue
        where = f"strategies[{i}].compare_with"
        if twin == strategy.name:
            raise ValueError(f"{where} names '{twin}' itself: a strategy has another as its twin")
        if twin not in names:
            raise ValueError(f"{where}: unknown strategy '{twin}' (valid: {', '.join(names)})")


def _param(item: object, where: str) -> ParamSpec:
    named = _named(item, where)
    assert isinstance(item, dict)
    kind = item.get("type")
    if kind not in PARAM_TYPES:
        raise ValueError(f"{where}.type must be one of {', '.join(PARAM_TYPES)}, got {kind!r}")
    choices = item.get("choices", [])
    if kind == "choice" and (
        not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices)
    ):
        raise ValueError(f"{where}.choices must be a non-empty list of strings")
    bounds = {}
    for key in ("min", "max"):
        bound = item.get(key)
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int | float)):
            raise ValueError(f"{where}.{key} must be a number, got {bound!r}")
        bounds[key] = bound
    spec = ParamSpec(
        name=named.name,
        type=str(kind),
        default="",
        help=named.help,
        min=bounds["min"],
        max=bounds["max"],
        choices=tuple(choices) if kind == "choice" else (),
    )
    try:
        default = spec.coerce(item.get("default"))
    except ValueError as err:
        raise ValueError(f"{where}.default: {err}") from err
    return replace(spec, default=default)


def _scenario(item: object, where: str, params: Mapping[str, ParamSpec]) -> Scenario:
    named = _named(item, where)
    assert isinstance(item, dict)
    values = item.get("params", {})
    if not isinstance(values, dict):
        raise ValueError(f"{where}.params must be an object")
    for key in values:
        if key not in params:
            raise ValueError(f"{where}.params sets '{key}', which is not in 'params'")
    return Scenario(name=named.name, help=named.help, params=dict(values))


def _plot(item: object, where: str) -> PlotSpec:
    named = _named(item, where)
    assert isinstance(item, dict)
    if not _PLOT_NAME.fullmatch(named.name):
        raise ValueError(f"{where}.name must be letters, digits, '_' or '-', got {named.name!r}")
    chart = item.get("chart")
    if chart not in CHARTS:
        raise ValueError(f"{where}.chart must be one of {', '.join(CHARTS)}, got {chart!r}")
    title = item.get("title", named.name)
    if not isinstance(title, str):
        raise ValueError(f"{where}.title must be a string, got {title!r}")
    entries = item.get("metrics")
    one = CHARTS[chart].one_series
    count = "exactly one entry" if one else "at least one entry"
    if not isinstance(entries, list) or not entries or (one and len(entries) != 1):
        raise ValueError(f"{where}.metrics must be a list with {count} for a {chart} chart")
    series = []
    for i, entry in enumerate(entries):
        field = _named(entry, f"{where}.metrics[{i}]")
        assert isinstance(entry, dict)
        label = entry.get("label", field.name)
        if not isinstance(label, str):
            raise ValueError(f"{where}.metrics[{i}].label must be a string, got {label!r}")
        series.append(Series(name=field.name, label=label))
    return PlotSpec(name=named.name, chart=str(chart), title=title, series=tuple(series))
