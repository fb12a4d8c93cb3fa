"""What a workload names reaches the terminal and summary.md escaped (issue 32, item 12): the
oddnames fixture's strategies set the terminal's title and clear its screen, its scenario turns
the text red and one strategy holds a `|` and a newline. Very large figures print in
scientific notation rather than as digits before a T."""

from __future__ import annotations

import sys

import pytest
from conftest import FIXTURES, run_harness, runs_dir

from harness.format.names import printable
from harness.format.numbers import human, human_ratio, thousands

pytestmark = pytest.mark.unit

ODD_SUITES = FIXTURES / "odd-suites"
ODDNAMES = ODD_SUITES / "oddnames"
# What the fixture's names would do to a terminal, and what they show as instead.
RAW = ("\x1b]0;title\x07", "\x1b[2J", "steady\x1b[31m", "pipe|and\nnewline")
STRATEGIES = (r"\x1b]0;title\x07", r"\x1b[2J", r"pipe|and\nnewline")
ESCAPED = (*STRATEGIES, r"steady\x1b[31m")
SHORT = ["--repeat", "2", "--duration-s", "0.1", "--warmup-s", "0"]


def assert_escaped(output: str, escaped: tuple[str, ...] = ESCAPED) -> None:
    """None of the names raw in `output`, each of `escaped` in it."""
    present = [raw for raw in RAW if raw in output]
    assert not present, (present, output)
    missing = [name for name in escaped if name not in output]
    assert not missing, (missing, output)


@pytest.fixture
def plain_env(harness_env: dict[str, str]) -> dict[str, str]:
    """No colours forced: the only escape codes in the output would be the workload's."""
    env = {k: v for k, v in harness_env.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return env | {"HARNESS_SUITES_PATH": str(ODD_SUITES)}


def test_control_characters_show_as_escapes() -> None:
    assert printable("\x1b]0;title\x07") == r"\x1b]0;title\x07"
    assert printable("a\nb\tc\rd\x00\x7f\x9b") == r"a\nb\tc\rd\x00\x7f\x9b"
    assert printable("wait avg · µs → 漢字 [bold]") == "wait avg · µs → 漢字 [bold]"


def test_harness_list_shows_the_names_escaped(plain_env: dict[str, str]) -> None:
    done = run_harness(["list"], plain_env)
    assert done.returncode == 0, done.stderr
    listed = done.stdout[done.stdout.index("oddnames:") :]
    assert_escaped(listed)


def test_harness_run_and_compare_show_the_names_escaped(plain_env: dict[str, str]) -> None:
    """Progress lines, tables and notes of `run`, and both tables of `compare`."""
    for _ in range(2):
        done = run_harness(["run", "oddnames", *SHORT], plain_env)
        assert done.returncode == 0, done.stderr
        assert_escaped(done.stdout)
        assert_escaped(done.stderr, STRATEGIES)  # its progress lines name no scenario
        assert r"cell 2/4 repeat 1/2 \x1b]0;title\x07: 1,000 ops/s" in done.stderr
    first, second = sorted(runs_dir(plain_env).iterdir())
    for wide in ([], ["--wide"]):
        done = run_harness(["compare", str(first), str(second), *wide], plain_env)
        assert done.returncode == 0, done.stderr
        assert_escaped(done.stdout, STRATEGIES)  # one scenario: not named


def test_the_live_progress_bar_shows_the_names_escaped(plain_env: dict[str, str]) -> None:
    """As on a terminal (rich's own colours and cursor moves), the workload's codes escaped."""
    done = run_harness(["run", "oddnames", *SHORT], plain_env | {"FORCE_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert_escaped(done.stdout + done.stderr, ())
    assert r"cell 4/4 repeat 2/2 pipe|and\nnewline" in done.stderr  # the bar's last words


def test_summary_md_keeps_one_table_row_a_cell(plain_env: dict[str, str]) -> None:
    done = run_harness(["run", "oddnames", *SHORT], plain_env)
    assert done.returncode == 0, done.stderr
    (run_dir,) = runs_dir(plain_env).iterdir()
    summary = (run_dir / "summary.md").read_text()
    assert "\x1b" not in summary and "\x07" not in summary
    rows = [line for line in summary.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| `plain`",
        r"| `\x1b]0;title\x07`",
        r"| `\x1b[2J`",
        r"| `pipe\|and\nnewline`",
    ]
    assert all(row.endswith(" | 2/2 |") for row in rows)


@pytest.mark.parametrize(
    ("value", "time_ns", "expected"),
    [
        (1.2e17, False, "1.2e17"),
        (-1.2e17, False, "-1.2e17"),
        (999e12, False, "999.0T"),  # the largest prefix while it has room
        (999.96e12, False, "1e15"),  # rounding carries past it
        (sys.float_info.max, False, "1.8e308"),
        (3.6e12, True, "3.6e3s"),  # an hour in ns, past the seconds
        (999e9, True, "999.0s"),
    ],
)
def test_figures_past_the_largest_prefix_are_scientific(
    value: float, time_ns: bool, expected: str
) -> None:
    assert human(value, time_ns) == expected


def test_ratios_and_counts_past_their_range_are_scientific() -> None:
    assert human_ratio(12_345.0) == "1.23e4\N{MULTIPLICATION SIGN}"
    assert human_ratio(999.0) == "999.0\N{MULTIPLICATION SIGN}"
    assert thousands(2_000_000.0) == "2,000,000"
    assert thousands(1e308) == "1e308"
