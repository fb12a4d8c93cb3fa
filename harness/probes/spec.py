"""Parsing of `--probes LIST`: the registry's kinds by name, bpftrace scripts as `bt:PATH`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.errors import BadInput
from harness.paths import REPO_ROOT
from harness.probes import registry
from harness.probes.probe import ProbeSpec

NAMED = registry.names()
COLLECTORS = registry.collector_names()  # those built into bpf/build/
ALL = "all"
NONE = "none"
BT_PREFIX = "bt:"
VALID = f"{', '.join(NAMED)}, {ALL}, {NONE}, {BT_PREFIX}PATH/TO/SCRIPT.bt"
ALIAS_TEXT = "; ".join(f"{alias}: an alias of {name}" for alias, name in registry.ALIASES.items())
BPF_DIR = REPO_ROOT / "bpf"


def bpftrace_script(text: str) -> ProbeSpec:
    """`bt:PATH`: PATH as given (relative to the current folder), else under the repo's bpf/."""
    raw = text[len(BT_PREFIX) :].strip()
    if not raw:
        raise BadInput(f"probe '{text}': expected {BT_PREFIX}PATH/TO/SCRIPT.bt")
    for candidate in (Path(raw), BPF_DIR / raw):
        if candidate.is_file():
            path = candidate.resolve()
            return ProbeSpec(f"{BT_PREFIX}{path.stem}", path)
    raise BadInput(f"probe '{text}': no bpftrace script at {raw} (nor at {BPF_DIR / raw})")


def parse_probes(text: str) -> tuple[ProbeSpec, ...]:
    """`sched,futex,bt:x.bt` -> specs in order, duplicates dropped; `all` = every named probe;
    an alias (`jvmgc`) is its probe (`gc`). The probes given by name are `named`, also when
    `all` lists them too."""
    words = list(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
    if not words:
        raise BadInput(f"--probes: expected a comma-separated list (valid: {VALID})")
    if NONE in words:
        if len(words) > 1:
            raise BadInput(f"--probes: '{NONE}' cannot be combined with other probes")
        return ()
    specs: dict[str, ProbeSpec] = {}
    for word in words:
        if word == ALL:
            chosen = [ProbeSpec(name) for name in NAMED]
        elif word in NAMED or word in registry.ALIASES:
            chosen = [ProbeSpec(registry.ALIASES.get(word, word), named=True)]
        elif word.startswith(BT_PREFIX):
            chosen = [dataclasses.replace(bpftrace_script(word), named=True)]
        else:
            raise BadInput(f"unknown probe '{word}' (valid: {VALID})")
        for spec in chosen:
            known = specs.get(spec.name)
            if known is not None and known != spec:
                raise BadInput(
                    f"two bpftrace scripts named '{spec.name}': {known.script} and {spec.script}"
                )
            named = spec.named or (known is not None and known.named)
            specs[spec.name] = dataclasses.replace(spec, named=named)
    return tuple(specs.values())
