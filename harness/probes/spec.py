"""Parsing of `--probes LIST`: the libbpf collectors and the perf profiler by name, bpftrace
scripts as `bt:PATH`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput
from harness.paths import REPO_ROOT

COLLECTORS = ("sched", "futex", "gc")  # libbpf collectors in bpf/build/
PROFILERS = ("oncpu",)  # perf sampling, see harness/probes/oncpu.py
NAMED = COLLECTORS + PROFILERS
ALL = "all"
NONE = "none"
BT_PREFIX = "bt:"
VALID = f"{', '.join(NAMED)}, {ALL}, {NONE}, {BT_PREFIX}PATH/TO/SCRIPT.bt"
BPF_DIR = REPO_ROOT / "bpf"


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: a collector (`sched`, `futex`), the profiler (`oncpu`) or a bpftrace script
    (`bt:<stem>`)."""

    name: str
    script: Path | None = None  # absolute path of a bpftrace script

    @property
    def is_bpftrace(self) -> bool:
        return self.script is not None

    @property
    def file_stem(self) -> str:
        """For raw file names: `sched`, `bt-syscalls_per_op`."""
        return self.name.replace(":", "-")


def collector(name: str) -> ProbeSpec:
    return ProbeSpec(name)


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
    """`sched,futex,bt:x.bt` -> specs in order, duplicates dropped; `all` = every named probe."""
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
            chosen = [collector(name) for name in NAMED]
        elif word in NAMED:
            chosen = [collector(word)]
        elif word.startswith(BT_PREFIX):
            chosen = [bpftrace_script(word)]
        else:
            raise BadInput(f"unknown probe '{word}' (valid: {VALID})")
        for spec in chosen:
            known = specs.get(spec.name)
            if known is not None and known != spec:
                raise BadInput(
                    f"two bpftrace scripts named '{spec.name}': {known.script} and {spec.script}"
                )
            specs[spec.name] = spec
    return tuple(specs.values())
