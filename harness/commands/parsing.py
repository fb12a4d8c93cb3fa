"""What every verb's parser shares: usage errors as one line, help texts, the exit codes the
help documents, and the types of option values."""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeAlias, TypeVar

from harness.errors import BadInput

EXIT_INTERRUPTED = 130
EXIT_CODES = """\
exit codes:
  0    done (for run/bench: every repeat succeeded)
  1    some repeats failed (see cells[].failures in run.json), a write error (run.json says
       failed, with it, where it can still be written), or another error
  2    bad input, checked before the lock is taken and before anything is created: unknown
       suite, strategy, scenario or parameter, a bad value, a suite not built, input the
       workload's `check` or bpftrace's dry run rejects, a --perf-frequency above the
       kernel's limit, an --out that cannot be written or lacks room for the run
  3    another `harness run` or `harness bench` holds the machine's lock
  130  interrupted (Ctrl-C or SIGTERM): run.json keeps the completed repeats

environment:
  HARNESS_WORKLOADS          the folder of suites searched first (default: <repo>/workloads)
  HARNESS_SUITES_PATH        more folders of suites, colon-separated, searched after it in
                             order; of two suites with one name the first wins
  HARNESS_RESULTS            results folder; runs go to its runs/ (default: <repo>/results)
  HARNESS_LOCK               lock file (default: /run/lock/harness.lock, else /tmp/harness.lock)
  HARNESS_DEADLINE_SLACK_S   a repeat is killed after warm-up + duration + this (default: 120)
  HARNESS_PROBES             default of --probes for run and bench (default: all)
  HARNESS_BPF_BUILD          folder of the built probe collectors (default: <repo>/bpf/build)
  HARNESS_DB                 history database URL (default: sqlite:///<results>/history.sqlite)
"""
FORMATTER = argparse.RawDescriptionHelpFormatter
N = TypeVar("N", int, float)
# What add_subparsers returns; each verb adds its parser to it.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Parser(argparse.ArgumentParser):
    """Usage errors as one `harness: error: ...` line, exit code 2.

    `precheck`, when a verb sets it, sees the verb's arguments before argparse parses them
    and returns a usage error or None: argparse's time grows with the square of the number
    of options (20,000 `--param`s take it 9 s), so a count too large is refused first."""

    precheck: Callable[[Sequence[str]], str | None] | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.precheck is not None and args is not None:
            problem = self.precheck(args)
            if problem is not None:
                self.error(problem)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"harness: error: {message} (see `{self.prog} --help`)\n")


def add_wide_option(parser: argparse.ArgumentParser) -> None:
    """--wide, of the verbs that print a run's table (run, bench, compare)."""
    parser.add_argument(
        "--wide",
        action="store_true",
        help="print every metric column and every note: by default the table fits the "
        "terminal ($COLUMNS) with a line a row, the headline metrics and the per-op figures "
        "that fit, and names the columns left out (report.html and run.json have them all)",
    )


def help_text(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def bounded(kind: type[N], low: N, *, strict: bool, what: str) -> Callable[[str], N]:
    """An argparse type: a finite `kind` (int or float) above `low` when `strict`, else at
    least `low`."""
    bound = f"{'>' if strict else '>='} {low:g}"

    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what} {bound}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}")
        return value

    return parse


positive_float = bounded(float, 0.0, strict=True, what="a number")
non_negative_float = bounded(float, 0.0, strict=False, what="a number")
positive_int = bounded(int, 1, strict=False, what="an integer")
non_negative_int = bounded(int, 0, strict=False, what="an integer")
pid = bounded(int, 1, strict=False, what="a process id")


def names(text: str) -> list[str]:
    found = [n.strip() for n in text.split(",") if n.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of names, got {text!r}")
    return found


def param_sweep(pairs: Sequence[str]) -> dict[str, list[str]]:
    """The values --param KEY=VALUE gave each key, in their order (a key given again sweeps)."""
    sweep: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--param {pair!r}: expected KEY=VALUE, e.g. --param concurrency=64")
        sweep.setdefault(key.strip(), []).append(value)
    return sweep
