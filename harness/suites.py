"""Loading and validating suites: one folder of suites (`<folder>/<suite>/suite.toml`) at a time."""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import BadInput

# A value in [bench.params]: the binary's describe says which of these a parameter accepts.
TomlScalar = str | int | float | bool

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_TOP_KEYS = {
    "name",
    "description",
    "binary",
    "build",
    "baseline",
    "requires",
    "bench",
    "quick",
    "scratch",
}
_MATRIX_KEYS = {
    "strategies",
    "scenario",
    "scenarios",
    "repeats",
    "duration_s",
    "warmup_s",
    "params",
    "scale",
    "explain_repeats",
}
_SCALE_KEYS = {"reference_threads", "params", "minimum"}
_SCRATCH_KEYS = {"size_param", "dir_param"}


@dataclass(frozen=True)
class Scale:
    """Scale int parameters by logical_cpus / reference_threads, never below `minimum`."""

    reference_threads: int
    params: tuple[str, ...]
    minimum: int
    key: str  # where it was set, e.g. "bench.scale", for error messages

    def apply(self, value: int, logical_cpus: int) -> int:
        return max(self.minimum, round(value * logical_cpus / self.reference_threads))


@dataclass(frozen=True)
class Matrix:
    """What `harness bench` runs for a suite ([bench], or [bench] overlaid with [quick])."""

    strategies: tuple[str, ...] | None  # None: every strategy the binary describes
    scenarios: tuple[str, ...] | None  # None: the binary's default scenario
    repeats: int
    duration_s: float
    warmup_s: float
    params: dict[str, tuple[TomlScalar, ...]]  # each entry is a sweep axis
    scale: Scale | None
    explain_repeats: int | None = None  # per cell; None: the harness's default (run/plan.py)


@dataclass(frozen=True)
class ScratchParams:
    """suite.toml [scratch]: the cells need a scratch file the harness writes (harness/run/
    scratch.py); these describe parameters give its size in MiB and its folder."""

    size_param: str  # an int parameter: the file's size in MiB
    dir_param: str | None  # a string parameter: its folder, "" = the default; None: always it


DEFAULT_MATRIX = Matrix(
    strategies=None, scenarios=None, repeats=5, duration_s=10.0, warmup_s=2.0, params={}, scale=None
)


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    folder: Path
    manifest: Path  # the suite.toml
    binary: Path
    build: str | None
    baseline: str | None  # None: the binary's describe names it
    bench: Matrix
    quick: Matrix
    requires: tuple[str, ...] = ()  # commands it needs on PATH (suite.toml `requires`)
    scratch: ScratchParams | None = None  # suite.toml [scratch]

    @property
    def built(self) -> bool:
        return self.binary.is_file() and os.access(self.binary, os.X_OK)

    def missing_requirements(self) -> list[str]:
        """The commands of `requires` that are not on PATH."""
        return [command for command in self.requires if shutil.which(command) is None]


class _Table:
    """Typed access to one TOML table; every error names the file and the dotted key."""

    def __init__(self, manifest: Path, prefix: str, data: Mapping[str, Any]) -> None:
        self.manifest = manifest
        self.prefix = prefix
        self.data = data

    def error(self, key: str, problem: str) -> BadInput:
        return BadInput(f"{self.manifest}: key '{self.prefix}{key}': {problem}")

    def check_keys(self, allowed: set[str]) -> None:
        for key in self.data:
            if key not in allowed:
                valid = ", ".join(sorted(allowed))
                raise self.error(key, f"unknown key (valid: {valid})")

    def string(self, key: str, *, required: bool = False) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.error(key, "missing (a string is required)")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"expected a non-empty string, got {value!r}")
        return value

    def integer(self, key: str, default: int, minimum: int) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(key, f"expected an integer >= {minimum}, got {value!r}")
        return value

    def number(self, key: str, default: float, *, positive: bool) -> float:
        value = self.data.get(key, default)
        bad_type = isinstance(value, bool) or not isinstance(value, int | float)
        if bad_type or value < 0 or (positive and value == 0):
            bound = "> 0" if positive else ">= 0"
            raise self.error(key, f"expected a number {bound}, got {value!r}")
        return float(value)

    def names(self, key: str) -> tuple[str, ...] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise self.error(key, f"expected a non-empty list of strings, got {value!r}")
        return tuple(dict.fromkeys(value))

    def table(self, key: str) -> _Table | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"expected a table ([{self.prefix}{key}]), got {value!r}")
        return _Table(self.manifest, f"{self.prefix}{key}.", value)


def _sweep_axes(table: _Table) -> dict[str, tuple[TomlScalar, ...]]:
    axes: dict[str, tuple[TomlScalar, ...]] = {}
    for key, value in table.data.items():
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str | int | float | bool) for v in values):
            raise table.error(key, f"expected a value or a non-empty list of values, got {value!r}")
        axes[key] = tuple(dict.fromkeys(values))
    return axes


def _scale(table: _Table) -> Scale:
    table.check_keys(_SCALE_KEYS)
    names = table.names("params")
    if names is None:
        raise table.error("params", "missing (the list of int parameters to scale)")
    return Scale(
        reference_threads=table.integer("reference_threads", 32, 1),
        params=names,
        minimum=table.integer("minimum", 1, 1),
        key=table.prefix.rstrip("."),
    )


def _matrix(table: _Table | None, base: Matrix) -> Matrix:
    """`base` overlaid with the keys present in `table`; [params] merges axis by axis."""
    if table is None:
        return base
    table.check_keys(_MATRIX_KEYS)
    params_table = table.table("params")
    params = dict(base.params)
    if params_table is not None:
        params.update(_sweep_axes(params_table))
    scale_table = table.table("scale")
    scale = _scale(scale_table) if scale_table is not None else base.scale
    if scale is not None:
        for name in scale.params:
            if name not in params:
                raise table.error("scale.params", f"'{name}' is not swept in [bench.params]")
    if "scenario" in table.data and "scenarios" in table.data:
        raise table.error("scenarios", "set 'scenario' or 'scenarios', not both")
    one = table.string("scenario")
    repeats = table.integer("repeats", base.repeats, 1)
    explain = base.explain_repeats
    if "explain_repeats" in table.data:
        explain = table.integer("explain_repeats", 0, 0)
    if explain is not None and explain > repeats:
        raise table.error("explain_repeats", f"{explain} is more than the {repeats} repeats")
    return Matrix(
        strategies=table.names("strategies") or base.strategies,
        scenarios=table.names("scenarios") or ((one,) if one else base.scenarios),
        repeats=repeats,
        duration_s=table.number("duration_s", base.duration_s, positive=True),
        warmup_s=table.number("warmup_s", base.warmup_s, positive=False),
        params=params,
        scale=scale,
        explain_repeats=explain,
    )


def _scratch(table: _Table | None) -> ScratchParams | None:
    if table is None:
        return None
    table.check_keys(_SCRATCH_KEYS)
    size_param = table.string("size_param", required=True)
    assert size_param is not None
    return ScratchParams(size_param=size_param, dir_param=table.string("dir_param"))


def load_suite(manifest: Path) -> Suite:
    """Parse and validate one suite.toml."""
    # Absolute: the binary is started with the suite's folder as its working directory.
    manifest = manifest.absolute()
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except OSError as err:
        raise BadInput(f"{manifest}: cannot read: {err.strerror}") from err
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"{manifest}: invalid TOML: {err}") from err
    top = _Table(manifest, "", data)
    top.check_keys(_TOP_KEYS)
    name = top.string("name", required=True)
    assert name is not None
    if not _NAME.match(name):
        raise top.error("name", f"'{name}' must match [a-z0-9][a-z0-9_-]*")
    binary = top.string("binary", required=True)
    assert binary is not None
    bench = _matrix(top.table("bench"), DEFAULT_MATRIX)
    quick = _matrix(top.table("quick"), bench)
    requires = data.get("requires", [])
    if not isinstance(requires, list) or not all(isinstance(c, str) and c for c in requires):
        raise top.error("requires", f"expected a list of command names, got {requires!r}")
    return Suite(
        name=name,
        description=top.string("description") or "",
        folder=manifest.parent,
        manifest=manifest,
        binary=Path(os.path.normpath(manifest.parent / binary)),  # ../target/... shown short
        build=top.string("build"),
        baseline=top.string("baseline"),
        bench=bench,
        quick=quick,
        requires=tuple(requires),
        scratch=_scratch(top.table("scratch")),
    )


def discover(root: Path) -> dict[str, Suite]:
    """Every suite under `root`, by name, in folder order."""
    if not root.is_dir():
        raise BadInput(f"workloads folder {root} does not exist (set HARNESS_WORKLOADS)")
    suites: dict[str, Suite] = {}
    for manifest in sorted(root.glob("*/suite.toml")):
        suite = load_suite(manifest)
        if suite.name in suites:
            other = suites[suite.name].manifest
            raise BadInput(f"{manifest}: key 'name': '{suite.name}' is also the name of {other}")
        suites[suite.name] = suite
    return suites


def select(suites: Mapping[str, Suite], names: list[str] | None) -> list[Suite]:
    """The named suites (all when `names` is None); an unknown name is bad input."""
    if names is None:
        return list(suites.values())
    chosen = []
    for name in dict.fromkeys(names):
        if name not in suites:
            raise BadInput(f"unknown suite '{name}' (valid: {', '.join(suites) or 'none found'})")
        chosen.append(suites[name])
    return chosen
