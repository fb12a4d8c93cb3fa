"""Driver of the `gc` probe: the GC pauses of whatever runtime the measured processes run.

At `ready` it looks at each process: those whose executable carries the Go runtime go to the
libbpf collector bpf/build/gc (uprobes, all of them), the first JVM (libjvm.so mapped) to
bpf/jvmgc.bt.in through bpftrace (HotSpot's USDT probes; the script follows one pid). Each
part writes its own output next to the probe's (`r<N>-gc.<runtime>.json`); finish() merges
them into the probe's one output: `processes` of both (each with its `runtime`), `totals`
added up, and each part's other keys (the collector's `window_ns`, `lost_events`; the
script's `script`, `notes`, `lines`).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.base.stop import StopFlag
from harness.base.writes import write_json_atomic
from harness.probes.drivers import jvmgc
from harness.probes.drivers.collector import CollectorProbe
from harness.probes.probe import Probe, ProbeResult, ProbeSpec
from harness.probes.totals import add

# Any of these makes an ELF file a Go program (as bpf/gc.c decides it).
GO_SECTIONS = frozenset({".go.buildinfo", ".gopclntab", ".note.go.buildid"})
ELF_MAGIC = b"\x7fELF"
ELF_CLASS = {1: ("IIIIII", "HHIIIIIHHHHHH"), 2: ("IIQQQQ", "HHIQQQIHHHHHH")}  # 32, 64 bit
ELF_ORDER = {1: "<", 2: ">"}
NAMES_MAX = 1 << 20  # bytes of section names read at most


def section_names(path: Path) -> frozenset[str]:
    """The names of an ELF file's sections; none if it is not ELF or cannot be read."""
    try:
        with path.open("rb") as elf:
            ident = elf.read(16)
            if ident[:4] != ELF_MAGIC or ident[4] not in ELF_CLASS or ident[5] not in ELF_ORDER:
                return frozenset()
            section, file_header = (
                struct.Struct(ELF_ORDER[ident[5]] + f) for f in ELF_CLASS[ident[4]]
            )
            fields = file_header.unpack(elf.read(file_header.size))
            offset, entry_size, count, names_index = fields[5], fields[10], fields[11], fields[12]
            if not offset or names_index >= count or entry_size < section.size:
                return frozenset()
            elf.seek(offset)
            table = elf.read(entry_size * count)
            headers = [section.unpack_from(table, i * entry_size) for i in range(count)]
            elf.seek(headers[names_index][4])
            names = elf.read(min(headers[names_index][5], NAMES_MAX))
    except (OSError, struct.error):
        return frozenset()
    found = (names[h[0] :].split(b"\0", 1)[0] for h in headers if h[0] < len(names))
    return frozenset(name.decode(errors="replace") for name in found if name)


def is_go(pid: int) -> bool:
    return bool(section_names(Path(f"/proc/{pid}/exe")) & GO_SECTIONS)


def exe_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/exe").readlink().name
    except OSError:
        return f"pid {pid}"


def part_path(out_path: Path, runtime: str) -> Path:
    """`r1-gc.go.json` beside `r1-gc.json`: one part's output until finish() merges it (a
    repeat's file name, so that the clean-up after a crash takes it too)."""
    return out_path.with_name(f"{out_path.stem}.{runtime}{out_path.suffix}")


def merge(parts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The parts' outputs as one: processes listed with their runtime, totals added up."""
    out: dict[str, Any] = {"probe": "gc", "processes": [], "totals": None}
    for runtime, data in parts.items():
        for key, value in data.items():
            if key == "processes":
                out["processes"] += [{**process, "runtime": runtime} for process in value]
            elif key == "totals":
                out["totals"] = add(out["totals"], value)
            elif key != "probe":
                out[key] = value  # the parts' other keys differ (window_ns vs script, ...)
    return out


class GcProbe:
    def __init__(self, spec: ProbeSpec, out_path: Path, now: bool) -> None:
        self.spec = spec
        self.out_path = out_path
        self.go = CollectorProbe(spec, part_path(out_path, "go"), now)
        self.jvm = jvmgc.JvmGcProbe(spec, part_path(out_path, "jvm"), out_path.with_suffix(".bt"))
        self.parts: dict[str, Probe] = {}  # runtime -> its part, those the processes run
        self.not_applicable: str | None = None

    def start(self, pids: Sequence[int]) -> None:
        go = [pid for pid in pids if is_go(pid)]
        jvm = next((pid for pid in pids if pid not in go and jvmgc.wait_libjvm(pid)), None)
        if go:
            self.parts["go"] = self.go
            self.go.start(go)
        if jvm is not None:
            self.parts["jvm"] = self.jvm
            self.jvm.start([jvm])
        if not self.parts:
            names = ", ".join(dict.fromkeys(exe_name(pid) for pid in pids))
            # No pid in the reason: the run's notes group equal reasons into one line.
            self.not_applicable = f"no Go program or JVM among the measured processes ({names})"

    @property
    def bpf_pids(self) -> list[int]:
        """The processes holding the probe's BPF programs: the collector, bpftrace."""
        return [p.process.pid for p in (self.go, self.jvm) if p.process is not None]

    def wait_attached(self, deadline: float, stop: StopFlag | None) -> None:
        for part in self.parts.values():
            part.wait_attached(deadline, stop)

    def window_start(self) -> None:
        for part in self.parts.values():
            part.window_start()

    def window_end(self) -> None:
        for part in self.parts.values():
            part.window_end()

    def finish(self) -> ProbeResult:
        return self._result({runtime: part.finish() for runtime, part in self.parts.items()})

    def abort(self, reason: str) -> ProbeResult:
        if not self.parts and self.not_applicable is None:  # it never looked at the processes
            return ProbeResult(self.spec.name, error=reason)
        return self._result({runtime: part.abort(reason) for runtime, part in self.parts.items()})

    def _result(self, results: Mapping[str, ProbeResult]) -> ProbeResult:
        """The parts' results as the probe's: their outputs merged, or why there is none (a
        part without output beside one with output is a note of that output)."""
        for runtime in results:
            with contextlib.suppress(OSError):
                part_path(self.out_path, runtime).unlink(missing_ok=True)
        done = {runtime: r.data for runtime, r in results.items() if r.ok and r.data is not None}
        why = {
            runtime: r.unavailable or r.error or "no output"
            for runtime, r in results.items()
            if runtime not in done
        }
        # With one part (one runtime, as usual) its reason is the probe's as it is.
        reasons = [
            f"{runtime}: {reason}" if len(results) > 1 else reason
            for runtime, reason in why.items()
        ]
        if not results:
            return ProbeResult(self.spec.name, not_applicable=self.not_applicable)
        if not done and all(r.unavailable for r in results.values()):
            return ProbeResult(self.spec.name, unavailable="; ".join(reasons))
        if not done:
            return ProbeResult(self.spec.name, error="; ".join(reasons))
        data = merge(done)
        if reasons:
            data["notes"] = [*data.get("notes", []), *reasons]
        try:
            write_json_atomic(self.out_path, data)
        except OSError as err:
            return ProbeResult(
                self.spec.name, error=f"cannot write {self.out_path}: {err.strerror}"
            )
        return ProbeResult(self.spec.name, path=self.out_path, data=data)
