"""suite.toml parsing, describe validation, and the plan built from both."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import plans
import pytest
from conftest import FIXTURES
from product_text import issue_refs

from harness.describe import ParamSpec, parse_description
from harness.errors import BadInput
from harness.params import render
from harness.paths import REPO_ROOT
from harness.run.plan import plan_matrix
from harness.suites import Scale, discover, load_suite, select

pytestmark = pytest.mark.unit

DESCRIBE: dict[str, Any] = {
    "suite": "toy",
    "contract_version": 1,
    "baseline": "b",
    "strategies": [{"name": "a", "help": "A"}, {"name": "b", "help": "B"}],
    "default_scenario": "steady",
    "scenarios": [
        {"name": "steady", "help": "", "params": {}},
        {"name": "slow-tail", "help": "", "params": {"slow": 0.01}},
    ],
    "params": [
        {"name": "n", "type": "int", "default": 64, "min": 1, "max": 100000, "help": ""},
        {"name": "slow", "type": "float", "default": 0.0, "min": 0, "max": 1, "help": ""},
        {"name": "mode", "type": "choice", "choices": ["r", "w"], "default": "w", "help": ""},
        {"name": "on", "type": "bool", "default": False, "help": ""},
    ],
    "metrics": [{"name": "ops_per_sec", "unit": "ops/s", "better": "higher"}],
}


def write_suite(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "suite.toml"
    manifest.write_text(text)
    return manifest


def test_the_fixture_suite_and_its_quick_overrides() -> None:
    suites = discover(FIXTURES)
    assert list(suites) == ["sleepy"]
    suite = suites["sleepy"]
    assert suite.binary == FIXTURES / "sleepy" / "sleepy.py" and suite.built
    assert suite.baseline == "slow"
    assert suite.bench.strategies == ("slow", "fast")
    assert suite.bench.params == {"rate": (64, 3200)}
    assert (suite.bench.repeats, suite.bench.duration_s, suite.bench.warmup_s) == (2, 0.2, 0.05)
    assert suite.bench.scale == Scale(32, ("rate",), 10, "bench.scale")
    # [quick] replaces what it sets and inherits the rest.
    assert (suite.quick.repeats, suite.quick.duration_s, suite.quick.warmup_s) == (2, 0.1, 0.0)
    assert suite.quick.params == suite.bench.params and suite.quick.scale == suite.bench.scale


def test_defaults_when_there_is_no_bench_table(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path / "s", 'name = "s"\nbinary = "bin/s"\n'))
    assert suite.bench.strategies is None and suite.bench.scenarios is None
    assert (suite.bench.repeats, suite.bench.duration_s, suite.bench.warmup_s) == (5, 10.0, 2.0)
    assert suite.build is None and suite.baseline is None and not suite.built


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('binary = "x"', "key 'name': missing"),
        ('name = "Bad Name"\nbinary = "x"', "key 'name': 'Bad Name' must match"),
        ('name = "s"', "key 'binary': missing"),
        ('name = "s"\nbinary = "x"\nbinnary = 1', "key 'binnary': unknown key (valid: baseline,"),
        ('name = "s"\nbinary = "x"\n[bench]\nrepeats = 0', "key 'bench.repeats': expected an "),
        ('name = "s"\nbinary = "x"\n[bench]\nrepeats = true', "key 'bench.repeats'"),
        ('name = "s"\nbinary = "x"\n[bench]\nduration_s = 0', "key 'bench.duration_s': expected a"),
        ('name = "s"\nbinary = "x"\n[quick]\nwarmup_s = -1', "key 'quick.warmup_s': expected a"),
        ('name = "s"\nbinary = "x"\n[bench]\nstrategies = []', "key 'bench.strategies'"),
        ('name = "s"\nbinary = "x"\n[bench]\nscenarios = "a"', "key 'bench.scenarios'"),
        (
            'name = "s"\nbinary = "x"\n[bench]\nscenario = "a"\nscenarios = ["b"]',
            "key 'bench.scenarios': set 'scenario' or 'scenarios', not both",
        ),
        ('name = "s"\nbinary = "x"\n[bench.params]\nn = []', "key 'bench.params.n'"),
        ('name = "s"\nbinary = "x"\n[bench.scale]\nminimum = 2', "key 'bench.scale.params': miss"),
        (
            'name = "s"\nbinary = "x"\n[bench.scale]\nparams = ["n"]',
            "key 'bench.scale.params': 'n' is not swept in [bench.params]",
        ),
        ('name = "s"\nbinary = "x"\nbench = 3', "key 'bench': expected a table"),
        ('name = "s"\nbinary = ', "invalid TOML"),
    ],
)
def test_invalid_suite_toml_names_the_file_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    manifest = write_suite(tmp_path / "s", text)
    with pytest.raises(BadInput) as err:
        load_suite(manifest)
    assert str(err.value).startswith(f"{manifest}: ")
    assert expected in str(err.value)


def test_duplicate_suite_names_and_unknown_selection(tmp_path: Path) -> None:
    write_suite(tmp_path / "one", 'name = "same"\nbinary = "x"\n')
    write_suite(tmp_path / "two", 'name = "same"\nbinary = "x"\n')
    with pytest.raises(BadInput, match=r"'same' is also the name of .*one/suite\.toml"):
        discover(tmp_path)
    with pytest.raises(BadInput, match="does not exist"):
        discover(tmp_path / "missing")
    with pytest.raises(BadInput, match=r"unknown suite 'nope' \(valid: sleepy\)"):
        select(discover(FIXTURES), ["nope"])


def test_scale_to_this_machine() -> None:
    scale = Scale(reference_threads=32, params=("n",), minimum=16, key="bench.scale")
    assert scale.apply(4096, 2) == 256
    assert scale.apply(256, 2) == 16
    assert scale.apply(4096, 32) == 4096
    assert scale.apply(4096, 64) == 8192


@pytest.mark.parametrize(
    ("spec", "raw", "value"),
    [
        ({"type": "int", "min": 1, "max": 10}, "7", 7),
        ({"type": "int"}, 7, 7),
        ({"type": "float", "min": 0, "max": 1}, "0.25", 0.25),
        ({"type": "float"}, 2, 2.0),
        ({"type": "bool"}, "true", True),
        ({"type": "bool"}, "no", False),
        ({"type": "choice", "choices": ["r", "w"]}, "r", "r"),
        ({"type": "string"}, "any thing", "any thing"),
    ],
)
def test_param_values_are_typed(spec: dict[str, Any], raw: object, value: object) -> None:
    param = ParamSpec(name="p", type=spec.pop("type"), default=0, help="", **spec)
    coerced = param.coerce(raw)
    assert coerced == value and type(coerced) is type(value)


@pytest.mark.parametrize(
    ("spec", "raw", "problem"),
    [
        ({"type": "int", "min": 1, "max": 10}, "11", "out of range"),
        ({"type": "int", "min": 1, "max": 10}, "0", "out of range"),
        ({"type": "int"}, "6.4", "not an integer"),
        ({"type": "int"}, True, "not an integer"),
        ({"type": "float"}, "nan", "not a finite number"),
        ({"type": "float"}, "fast", "not a finite number"),
        ({"type": "bool"}, "maybe", "not a boolean"),
        ({"type": "choice", "choices": ("r", "w")}, "x", "not a valid choice"),
        ({"type": "string"}, 3, "not a string"),
    ],
)
def test_bad_param_values(spec: dict[str, Any], raw: object, problem: str) -> None:
    param = ParamSpec(name="p", type=spec.pop("type"), default=0, help="", **spec)
    with pytest.raises(ValueError, match=problem):
        param.coerce(raw)


INT = ParamSpec(name="n", type="int", default=0, help="", min=-(2**60), max=2**60)
FLOAT = ParamSpec(name="x", type="float", default=0.0, help="")


@pytest.mark.parametrize(
    ("spec", "raw", "value"),
    [
        (INT, "8", 8),
        (INT, "8.0", 8),
        (INT, "1e3", 1000),
        (INT, "1E+3", 1000),
        (INT, "0.8e1", 8),
        (INT, "-0", 0),
        (INT, " 8 ", 8),
        (INT, "9007199254740993", 2**53 + 1),  # plain digits are exact beyond 2^53
        (INT, 8.0, 8),  # TOML's 8.0
        (FLOAT, "1", 1.0),
        (FLOAT, "0.25", 0.25),
        (FLOAT, "2.5e-1", 0.25),
        (FLOAT, "25E-2", 0.25),
    ],
)
def test_numbers_take_every_json_spelling(spec: ParamSpec, raw: object, value: object) -> None:
    coerced = spec.coerce(raw)
    assert coerced == value and type(coerced) is type(value)


@pytest.mark.parametrize(
    ("spec", "raw"),
    [
        *((INT, raw) for raw in ("8.5", "+8", "08", "0x10", "1_000", "8.", ".8e1", "8e", "inf")),
        *((INT, raw) for raw in ("", "1e400", "9007199254740993.0", 8.5)),
        *((FLOAT, raw) for raw in ("NaN", "inf", ".5", "1.", "+0.5", "0x1p-1", "0_5", "1e400")),
    ],
)
def test_numbers_take_no_other_spelling(spec: ParamSpec, raw: object) -> None:
    with pytest.raises(ValueError, match=r"is not (an integer|a finite number)"):
        spec.coerce(raw)


def test_values_render_for_the_command_line() -> None:
    assert [render(v) for v in (True, False, 64, 0.01, "x")] == ["true", "false", "64", "0.01", "x"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"strategies": []}, "'strategies' is empty"),
        ({"strategies": [{"help": "no name"}]}, "strategies[0] needs a non-empty string 'name'"),
        ({"default_scenario": "nope"}, "'default_scenario' 'nope' is not one of the scenarios"),
        ({"params": [{"name": "n", "type": "long", "default": 1}]}, "params[0].type must be"),
        (
            {"params": [{"name": "n", "type": "int", "default": 0, "min": 1}]},
            "params[0].default: 0 is out of range",
        ),
        ({"params": [{"name": "m", "type": "choice", "default": "a"}]}, "params[0].choices"),
        ({"metrics": [{"unit": "ns"}]}, "metrics[0] needs a string 'name'"),
        ({"metrics": [{"name": "x", "better": 1}]}, "metrics[0].better must be a str"),
        ({"metrics": [{"name": "x", "label": 1}]}, "metrics[0].label must be a str"),
        (
            {"plots": [{"name": "w", "chart": "pie", "metrics": [{"name": "h"}]}]},
            "plots[0].chart must be one of cdf, per_connection, series, got 'pie'",
        ),
        (
            {"plots": [{"name": "w", "chart": "cdf", "metrics": [{"name": "a"}, {"name": "b"}]}]},
            "plots[0].metrics must be a list with exactly one entry for a cdf chart",
        ),
        (
            {"plots": [{"name": "a/b", "chart": "cdf", "metrics": [{"name": "h"}]}]},
            "plots[0].name must be letters, digits, '_' or '-'",
        ),
        (
            {"plots": [{"name": "w", "chart": "per_connection", "metrics": [{"label": "x"}]}]},
            "plots[0].metrics[0] needs a non-empty string 'name'",
        ),
        (
            {"scenarios": [{"name": "steady", "params": {"ghost": 1}}]},
            "scenarios[0].params sets 'ghost'",
        ),
        (
            {"strategies": [{"name": "a", "compare_with": "zz"}, {"name": "b"}]},
            "strategies[0].compare_with: unknown strategy 'zz' (valid: a, b)",
        ),
        (
            {"strategies": [{"name": "a"}, {"name": "b", "compare_with": "b"}]},
            "strategies[1].compare_with names 'b' itself",
        ),
        (
            {"strategies": [{"name": "a", "compare_with": 3}]},
            "strategies[0].compare_with must be a strategy name, got 3",
        ),
        ({"contract_version": "2"}, "'contract_version' must be an integer, got '2'"),
        ({"contract_version": True}, "'contract_version' must be an integer, got True"),
        (
            {"contract_version": 3},
            "contract_version 3 is not one this harness knows (versions 1 and 2,",
        ),
    ],
)
def test_describe_output_is_checked(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_description({**DESCRIBE, **change}, "toy")
    assert problem in str(err.value)


@pytest.mark.parametrize(("version", "has_check"), [(None, False), (1, False), (2, True)])
def test_the_contract_version_says_whether_the_workload_has_check(
    version: int | None, has_check: bool
) -> None:
    doc = {k: v for k, v in DESCRIBE.items() if k != "contract_version"}
    if version is not None:
        doc["contract_version"] = version
    description = parse_description(doc, "toy")
    assert (description.contract_version, description.has_check) == (version or 1, has_check)


def test_a_strategy_names_its_twin_and_older_workloads_name_none() -> None:
    twinned = {"strategies": [{"name": "a", "compare_with": "b"}, {"name": "b"}]}
    assert parse_description({**DESCRIBE, **twinned}, "toy").twins == {"a": "b"}
    assert parse_description(DESCRIBE, "toy").twins == {}


SUITE_TOMLS = sorted(
    [*(REPO_ROOT / "workloads").glob("*/suite.toml"), *FIXTURES.glob("**/suite.toml")]
)


@pytest.mark.parametrize(
    "manifest", SUITE_TOMLS, ids=[str(p.parent.relative_to(REPO_ROOT)) for p in SUITE_TOMLS]
)
def test_no_suite_description_names_an_issue(manifest: Path) -> None:
    """suite.toml's description, which `harness list` and the reports show. The describe of
    the repo's built workloads is checked so in test_workload_contract.py; the scripts of
    the fixture suites here, as they need no build."""
    suite = load_suite(manifest)
    assert issue_refs(suite.description) == [], manifest
    if suite.binary.suffix == ".py":
        done = subprocess.run(
            [str(suite.binary), "describe"],
            cwd=suite.folder,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert issue_refs(json.dumps(json.loads(done.stdout))) == [], manifest


def plan_for(tmp_path: Path, **kwargs: Any) -> Any:
    suite = load_suite(write_suite(tmp_path / "toy", 'name = "toy"\nbinary = "toy"\n'))
    return plans.plan(suite, parse_description(DESCRIBE, "toy"), **kwargs)


def test_cells_are_strategies_times_the_swept_values(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, sweep={"n": ["8", "16", "8"], "mode": ["r", "w"]})
    assert plan.sweep == {"n": [8, 16], "mode": ["r", "w"]}
    assert [c.id for c in plan.cells] == [
        "a/n=8/mode=r",
        "a/n=8/mode=w",
        "a/n=16/mode=r",
        "a/n=16/mode=w",
        "b/n=8/mode=r",
        "b/n=8/mode=w",
        "b/n=16/mode=r",
        "b/n=16/mode=w",
    ]
    assert plan.cells[0].run_args() == [
        "--strategy",
        "a",
        "--scenario",
        "steady",
        "--param",
        "n=8",
        "--param",
        "mode=r",
    ]
    assert plan.baseline == "b"  # describe's, as suite.toml names none
    assert list(plan.schedule())[:9] == [(c, 0) for c in range(8)] + [(0, 1)]


def test_sequential_schedule(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, strategies=["b", "a"], order="sequential")
    assert [c.strategy for c in plan.cells] == ["b", "a"]
    assert list(plan.schedule()) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_scenario_params_show_in_cells_but_only_explicit_ones_are_passed(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, scenarios=["slow-tail"], sweep={"n": ["4"]})
    (cell, _) = plan.cells
    assert cell.params == {"slow": 0.01, "n": 4}
    assert cell.run_args()[-2:] == ["--param", "n=4"]


def test_several_scenarios_are_an_axis(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, scenarios=["steady", "slow-tail", "steady"])
    assert [c.id for c in plan.cells] == ["steady/a", "steady/b", "slow-tail/a", "slow-tail/b"]
    assert [c.scenario for c in plan.cells] == ["steady", "steady", "slow-tail", "slow-tail"]
    assert plan.cells[2].params == {"slow": 0.01}
    assert plan.config()["scenario"] == ["steady", "slow-tail"]
    with pytest.raises(BadInput, match="unknown scenario 'rush'"):
        plan_for(tmp_path, scenarios=["steady", "rush"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategies": ["c"]}, "unknown strategy 'c' for suite 'toy' (valid: a, b)"),
        ({"scenarios": ["x"]}, "unknown scenario 'x' for suite 'toy' (valid: steady, slow-tail)"),
        ({"sweep": {"m": ["1"]}}, "unknown parameter 'm' for suite 'toy' (valid: n, slow, mode"),
        ({"sweep": {"n": ["0"]}}, "bad value for parameter 'n': '0' is out of range (valid: int"),
        ({"sweep": {"mode": ["x"]}}, "'x' is not a valid choice (valid: r, w)"),
        ({"sweep": {"on": ["2"]}}, "'2' is not a boolean (valid: true, false)"),
    ],
)
def test_bad_plans_name_the_valid_choices(
    tmp_path: Path, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(BadInput) as err:
        plan_for(tmp_path, **kwargs)
    assert message in str(err.value)


def test_bench_matrix_is_scaled_and_clamped(tmp_path: Path) -> None:
    text = 'name = "toy"\nbinary = "toy"\n[bench.params]\nn = [4096, 256, 200000]\n'
    text += '[bench.scale]\nparams = ["n"]\nminimum = 16\n'
    suite = load_suite(write_suite(tmp_path / "toy", text))
    plan = plan_matrix(suite, parse_description(DESCRIBE, "toy"), suite.bench, 2)
    # 200000 is above describe's max, but scaled first: 12500 is in range.
    assert plan.sweep == {"n": [256, 16, 12500]}
    assert plan.scale == {
        "logical_cpus": 2,
        "reference_threads": 32,
        "minimum": 16,
        "params": ["n"],
    }
    plan = plan_matrix(suite, parse_description(DESCRIBE, "toy"), suite.bench, 64)
    assert plan.sweep == {"n": [8192, 512, 100000]}  # clamped to describe's max


def test_only_int_params_scale(tmp_path: Path) -> None:
    text = 'name = "toy"\nbinary = "toy"\n[bench.params]\nslow = [0.5]\n'
    text += '[bench.scale]\nparams = ["slow"]\n'
    manifest = write_suite(tmp_path / "toy", text)
    suite = load_suite(manifest)
    with pytest.raises(BadInput) as err:
        plan_matrix(suite, parse_description(DESCRIBE, "toy"), suite.bench, 2)
    assert str(err.value) == (
        f"{manifest}: key 'bench.scale.params': 'slow' is a float parameter; "
        "only int parameters scale"
    )


def test_a_baseline_unknown_to_describe_is_reported(tmp_path: Path) -> None:
    manifest = write_suite(tmp_path / "toy", 'name = "toy"\nbinary = "t"\nbaseline = "zz"\n')
    suite = load_suite(manifest)
    with pytest.raises(BadInput, match=r"key 'baseline': unknown strategy 'zz' \(valid: a, b\)"):
        plans.plan(suite, parse_description(DESCRIBE, "toy"), repeats=1)
