"""A machine's identity in the history: the host facts that make two runs comparable, and
their hash.

Hashed: hostname (two identical boxes stay two machines), CPU model, logical CPUs, SMT,
governor, turbo, isolated CPUs and memory. The kernel and the toolchains are not hashed:
they are recorded per run, and a change of either is annotated on the event it may explain,
so that an upgrade's effect shows as a change point in a continuing history instead of a
break into a new one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from harness.rundoc.model import Host

HASHED_KEYS = (
    "hostname",
    "cpu_model",
    "logical_cpus",
    "smt",
    "governor",
    "turbo",
    "isolated_cpus",
    "memory_bytes",
)


@dataclass(frozen=True)
class Fingerprint:
    keys: dict[str, Any]
    """The hashed facts, by name (null: not recorded)."""
    digest: str
    """sha256 of `canonical`."""

    @property
    def canonical(self) -> str:
        return canonical_json(self.keys)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def fingerprint(host: Host) -> Fingerprint:
    facts = host.model_dump()
    keys = {key: facts.get(key) for key in HASHED_KEYS}
    return Fingerprint(keys, hashlib.sha256(canonical_json(keys).encode()).hexdigest())
