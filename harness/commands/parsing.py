"""What every verb's parser shares: usage errors as one line, help texts, the exit codes the
help documents, and the types of option values."""

from __future__ import annotations

import argparse
import textwrap
from typing import NoReturn, TypeAlias

EXIT_INTERRUPTED = 130
EXIT_CODES = """\
exit codes:
  0    done (for run/bench: every repeat succeeded)
  1    some repeats failed (see cells[].failures in run.json), or another error
  2    bad input: unknown suite, strategy, scenario or parameter, a bad value, a suite not built
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
# What add_subparsers returns; each verb adds its parser to it.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Parser(argparse.ArgumentParser):
    """Usage errors as one `harness: error: ...` line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"harness: error: {message} (see `{self.prog} --help`)\n")


def help_text(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def positive_float(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def pid(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a process id, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a process id >= 1, got {text!r}")
    return value


def names(text: str) -> list[str]:
    found = [n.strip() for n in text.split(",") if n.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of names, got {text!r}")
    return found
