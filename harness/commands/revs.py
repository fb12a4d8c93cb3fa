"""`harness run TARGET --rev A --rev B`: the suite built at two revisions, the same cells
measured with both builds interleaved and paired by round, one table of B against A."""

from __future__ import annotations

import argparse
import json
import sys

from harness.bisect import revs
from harness.bisect.cells import Choice
from harness.bisect.duet import Timing
from harness.bisect.target import find_target
from harness.commands.runs import deadline_slack_s
from harness.errors import BadInput
from harness.paths import lock_path
from harness.runlock import RunLock

# The options of `harness run` that a run of two revisions does not take (it runs no probe).
_UNUSED = ("probes", "probe_overhead", "explain_repeats", "baseline", "out")


def handle_revs(args: argparse.Namespace, sweep: dict[str, list[str]]) -> int:
    for name in _UNUSED:
        if getattr(args, name, None):
            raise BadInput(
                f"--{name.replace('_', '-')} does not go with --rev (no probes, no run directory)"
            )
    choice = Choice(
        strategies=tuple(args.strategies or ()),
        scenarios=tuple(args.scenario or ()),
        sweep=sweep,
        metric=None,
    )
    target = find_target(args.suite)
    hashes = revs.check(target, list(args.rev))
    request = revs.Request(
        target=target,
        revs=(args.rev[0], args.rev[1]),
        choice=choice,
        timing=Timing(args.duration_s, args.warmup_s, deadline_slack_s()),
        rounds=args.repeat,
    )

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with RunLock(lock_path(), " ".join(args.command_line)):
        doc = revs.compare_revs(request, hashes, say)
    where = sys.stderr if args.json else sys.stdout
    if args.json:
        print(json.dumps(doc, indent=2))
    print(revs.table(doc), file=where)
    print(f"folder: {doc['folder']}", file=where, flush=True)
    return 0
