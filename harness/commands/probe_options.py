"""The probe and profile options of `run` and `bench` (`--probes` and `--kernel-stacks` of
`harness probe` too), and the settings they make."""

from __future__ import annotations

import argparse
import os

from harness.commands.parsing import positive_int
from harness.errors import BadInput
from harness.probes.drivers.perfrate import check_frequency
from harness.probes.kinds import offwake, oncpu
from harness.probes.probe import ProbeSpec
from harness.probes.registry import names as probe_names
from harness.probes.spec import ALIAS_TEXT, parse_probes
from harness.probes.spec import VALID as VALID_PROBES
from harness.profiles.patterns import DEFAULT_MUTEX_PATTERNS, parse_patterns
from harness.profiles.settings import CALLGRAPHS, DEFAULT_FREQUENCY_HZ, ProfileSettings

# The options of one kind each (ProfileSettings) are named after it, from its module.
KERNEL_STACKS_HELP = (
    f"{offwake.NAME}: also the kernel stacks of each blocking and of its waker (`_[k]` frames "
    "in the off-wake graphs); a kernel stack walk costs ~2 us on a VM where a user stack costs "
    f"~0.1 us, two a blocking: several times {offwake.NAME}'s cost per event (default: user stacks "
    "only, with the blocked thread's state; bpf/README.md)"
)


def add_probes_option(parser: argparse.ArgumentParser, *, recorded: bool) -> None:
    """--probes LIST. For a run's repeats (`recorded`: run and bench) its default is
    $HARNESS_PROBES, else all, read by probe_specs, and a probe that cannot run is recorded
    as unavailable; for `harness probe` it is all."""
    default = "$HARNESS_PROBES, else all" if recorded else "all"
    unavailable = (
        "; a probe that cannot run here is recorded as unavailable, with the reason"
        if recorded
        else ""
    )
    parser.add_argument(
        "--probes",
        default=None if recorded else "all",
        metavar="LIST",
        help=f"comma-separated probes: {VALID_PROBES} (default: {default} = "
        f"{','.join(probe_names())}; {ALIAS_TEXT}{unavailable})",
    )


def add_probe_options(parser: argparse.ArgumentParser) -> None:
    add_probes_option(parser, recorded=True)
    parser.add_argument(
        "--perf-frequency",
        type=positive_int,
        default=DEFAULT_FREQUENCY_HZ,
        metavar="HZ",
        help=f"{oncpu.NAME}: samples a second per CPU, at most the kernel's "
        f"perf_event_max_sample_rate (default: {DEFAULT_FREQUENCY_HZ})",
    )
    parser.add_argument(
        "--callgraph",
        choices=CALLGRAPHS,
        default="fp",
        help=f"{oncpu.NAME}: stacks by frame pointers (default) or DWARF unwinding (sees through "
        "code built without frame pointers, such as glibc; costs more)",
    )
    parser.add_argument(
        "--mutex-patterns",
        type=_mutex_patterns,
        metavar="LIST",
        help="frame substrings that make a sample lock-related for mutex_share "
        "(case-insensitive; `+a,b` adds to the defaults: "
        f"{','.join(DEFAULT_MUTEX_PATTERNS)})",
    )
    parser.add_argument("--kernel-stacks", action="store_true", help=KERNEL_STACKS_HELP)


def _mutex_patterns(text: str) -> tuple[str, ...]:
    try:
        return parse_patterns(text)
    except BadInput as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def profile_settings(args: argparse.Namespace) -> ProfileSettings:
    """The kinds' settings from their options; BadInput for a frequency the kernel would not
    sample at."""
    check_frequency(args.perf_frequency)
    return ProfileSettings(
        frequency_hz=args.perf_frequency,
        callgraph=args.callgraph,
        mutex_patterns=args.mutex_patterns or DEFAULT_MUTEX_PATTERNS,
        kernel_stacks=args.kernel_stacks,
    )


def probe_specs(args: argparse.Namespace) -> tuple[ProbeSpec, ...]:
    """--probes, else $HARNESS_PROBES, else all."""
    return parse_probes(args.probes or os.environ.get("HARNESS_PROBES") or "all")
