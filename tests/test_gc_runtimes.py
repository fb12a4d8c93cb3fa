"""The one `gc` probe without the kernel: which runtime a process runs (a Go executable by its
sections, else a JVM), the parts' outputs merged into one, and the same metrics for both
runtimes. The probes against real Go programs and JVMs: test_pools_e2e.py, test_gc_probe.py,
test_lettuce_e2e.py."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

import pytest

from harness.probes import registry
from harness.probes.drivers.gc import GcProbe, is_go, merge, section_names
from harness.probes.kind import RepeatContext
from harness.probes.probe import ProbeSpec

pytestmark = pytest.mark.unit


def elf_with_sections(path: Path, names: list[str]) -> Path:
    """A 64-bit little-endian ELF file with the named (empty) sections and .shstrtab."""
    strtab = b"\0" + b"".join(name.encode() + b"\0" for name in [*names, ".shstrtab"])
    offsets = [1 + sum(len(n) + 1 for n in names[:i]) for i in range(len(names) + 1)]
    shoff = 64 + len(strtab) + (-len(strtab)) % 8
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack(
        "<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(names) + 2, len(names) + 1
    )
    sections = bytes(64)  # the null section
    for offset in offsets[:-1]:
        sections += struct.pack("<IIQQQQIIQQ", offset, 1, 0, 0, 0, 0, 0, 0, 1, 0)
    sections += struct.pack("<IIQQQQIIQQ", offsets[-1], 3, 0, 0, 64, len(strtab), 0, 0, 1, 0)
    path.write_bytes(header + strtab + bytes(shoff - 64 - len(strtab)) + sections)
    return path


def test_a_go_executable_is_known_by_its_sections(tmp_path: Path) -> None:
    go = elf_with_sections(tmp_path / "go", [".text", ".go.buildinfo"])
    assert section_names(go) == {".text", ".go.buildinfo", ".shstrtab"}
    assert {".text", ".shstrtab"} <= section_names(Path(sys.executable))
    assert not section_names(Path(sys.executable)) & {".go.buildinfo", ".gopclntab"}
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert section_names(tmp_path / "script") == frozenset()
    truncated = tmp_path / "truncated"
    truncated.write_bytes(go.read_bytes()[:100])
    assert section_names(truncated) == frozenset()
    assert not is_go(os.getpid())  # python


def test_a_process_without_a_gc_runtime_gets_no_part(tmp_path: Path) -> None:
    probe = GcProbe(ProbeSpec("gc"), tmp_path / "r1-gc.json", now=False)
    probe.start([os.getpid()])
    assert probe.parts == {} and probe.bpf_pids == []
    name = Path(sys.executable).resolve().name
    reason = f"no Go program or JVM among the measured processes ({name})"
    assert probe.not_applicable == reason
    probe.window_start()
    probe.window_end()
    result = probe.finish()
    assert result.not_applicable == reason and result.unavailable is None and not result.ok
    assert list(tmp_path.iterdir()) == []


GO = {
    "pid": 7,
    "cycles": 3,
    "gc_stw_pauses": 6,
    "gc_stw_total_ns": 600,
    "gc_stw_max_ns": 200,
    "gc_stw_hist_log2_ns": [0] * 7 + [6],
}
JVM = {**GO, "pid": 9, "cycles": 2, "gc_stw_pauses": 2, "gc_ns_total": 150, "full_cycles": 0}


def test_both_runtimes_give_the_same_metrics() -> None:
    data = merge(
        {
            "go": {"probe": "gc", "window_ns": 5, "processes": [GO], "totals": {"cycles": 3}},
            "jvm": {
                "probe": "gc",
                "script": "r1-gc.bt",
                "processes": [JVM],
                "totals": {"cycles": 2},
            },
        }
    )
    assert [(p["pid"], p["runtime"]) for p in data["processes"]] == [(7, "go"), (9, "jvm")]
    assert data["totals"] == {"cycles": 5}
    assert (data["window_ns"], data["script"]) == (5, "r1-gc.bt")
    derive = registry.kind_of("gc").derive
    pause = {"count": 6, "total": 600, "max": 200, "p99": pytest.approx(128 + 128 * 5.94 / 6)}
    assert derive(data, RepeatContext(7, 10.0, None, ())) == {"gc_cycles": 3, "gc_pause_ns": pause}
    jvm = derive(data, RepeatContext(9, 10.0, None, ()))
    assert jvm == {"gc_cycles": 2, "gc_pause_ns": {**pause, "count": 2}, "jvm_gc_time_ns": 150}
    assert derive(data, RepeatContext(8, 10.0, None, ())) == {}  # the client is neither


def test_doctor_has_one_gc_line_for_both_runtimes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Go programs need the collector, JVMs bpftrace: either alone is a warning naming what
    the other lacks, neither is missing."""
    root = tmp_path / "root"
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "self" / "status").write_text("Name:\tx\nCapEff:\t000001ffffffffff\n")
    (root / "sys" / "kernel" / "btf").mkdir(parents=True)
    (root / "sys" / "kernel" / "btf" / "vmlinux").write_text("")
    # A kernel with what the collector needs (kernel_features.NEEDS["gc"]).
    (root / "proc" / "sys" / "kernel").mkdir(parents=True)
    (root / "proc" / "sys" / "kernel" / "osrelease").write_text("6.1.0-50-amd64\n")
    (root / "sys" / "bus" / "event_source" / "devices" / "uprobe").mkdir(parents=True)
    (root / "sys" / "bus" / "event_source" / "devices" / "uprobe" / "type").write_text("7\n")
    build, tools = tmp_path / "build", tmp_path / "bin"
    for folder, name in ((build, "gc"), (tools, "bpftrace")):
        folder.mkdir()
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    check = registry.kind_of("gc").check
    monkeypatch.setenv("HARNESS_BPF_BUILD", str(build))
    monkeypatch.setenv("PATH", str(tools))
    assert check(root).status == "ok"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    only_go = check(root)
    assert (only_go.status, only_go.fix) == ("warn", "apt install bpftrace")
    assert (
        only_go.detail == "Go programs only; JVMs: bpftrace is not installed (apt install bpftrace)"
    )
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.setenv("HARNESS_BPF_BUILD", str(tmp_path / "empty"))
    only_jvm = check(root)
    assert (only_jvm.status, only_jvm.fix) == ("warn", "make -C bpf")
    assert only_jvm.detail.startswith(f"JVMs only; Go programs: collector {tmp_path}/empty/gc")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert check(root).status == "missing"
