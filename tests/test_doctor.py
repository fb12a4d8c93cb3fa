import io
import json
import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from harness import doctor
from harness.doctor import Check, doctor_command, run_checks

pytestmark = pytest.mark.unit

CHECK_NAMES = [
    "privileges",
    "btf",
    "kernel",
    "perf",
    "perf_event_paranoid",
    "bpftrace",
    "bpftool",
    "clang",
    "governor",
    "turbo",
    "smt",
    "isolated_cpus",
    "background_load",
    "fio",
    "java",
    "mvn",
    "redis-server",
    "jvm usdt",
    "tracefs",
    "probe sched",
    "probe futex",
    "probe gc",
    "probe oncpu",
    "probe offwake",
    "probe perfstat",
    "probe bt",
]
ALL_CAPS = "000001ffffffffff"
NO_CAPS = "0000000000000000"
BPF_AND_PERFMON = f"{(1 << 38) | (1 << 39):016x}"


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def doctor_json() -> list[dict[str, str]]:
    console = Console(record=True, width=100, file=io.StringIO())
    assert doctor_command(console, as_json=True) == 0
    result: list[dict[str, str]] = json.loads(console.export_text())
    return result


def test_doctor_json_on_this_machine_has_every_check() -> None:
    checks = doctor_json()
    assert [c["check"] for c in checks] == CHECK_NAMES
    for c in checks:
        assert set(c) == {"check", "status", "detail", "fix"}
        assert c["status"] in {"ok", "warn", "missing"}
        assert c["detail"]
        if c["status"] != "ok":
            assert c["fix"], c
    by_name = {c["check"]: c for c in checks}
    # Judged independently of the doctor from what this process really has.
    status = Path("/proc/self/status").read_text()
    caps = int(
        next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1], 16
    )
    privileged = caps >> 21 & 1 or (caps >> 38 & 1 and caps >> 39 & 1)
    assert by_name["privileges"]["status"] == ("ok" if privileged else "missing")
    btf = Path("/sys/kernel/btf/vmlinux").exists()
    assert by_name["btf"]["status"] == ("ok" if btf else "missing")
    for tool in ("perf", "bpftrace", "bpftool", "clang", "fio"):
        assert (by_name[tool]["status"] == "missing") == (shutil.which(tool) is None)


def test_doctor_table_lists_checks_and_counts() -> None:
    console = Console(record=True, width=100, file=io.StringIO())
    assert doctor_command(console, as_json=False) == 0
    text = console.export_text()
    for name in CHECK_NAMES:
        assert name in text
    assert max(len(line) for line in text.splitlines()) <= 100
    counted = sum(int(part.split()[0]) for part in text.strip().splitlines()[-1].split(", "))
    assert counted == len(CHECK_NAMES)


def by_name(root: Path) -> dict[str, Check]:
    return {c.check: c for c in run_checks(root)}


def test_quiet_tuned_machine(tmp_path: Path) -> None:
    cpu = "sys/devices/system/cpu"
    write(tmp_path, "proc/self/status", f"Name:\tx\nCapEff:\t{BPF_AND_PERFMON}")
    write(tmp_path, "sys/kernel/btf/vmlinux", "")
    write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "-1")
    write(tmp_path, f"{cpu}/cpu0/cpufreq/scaling_governor", "performance")
    write(tmp_path, f"{cpu}/intel_pstate/no_turbo", "1")
    write(tmp_path, f"{cpu}/smt/active", "1")
    write(tmp_path, f"{cpu}/isolated", "2-7")
    write(tmp_path, "proc/mounts", "tracefs /sys/kernel/tracing tracefs rw,nosuid 0 0")
    checks = by_name(tmp_path)
    for name in ("privileges", "btf", "perf_event_paranoid", "governor", "turbo", "smt"):
        assert checks[name].status == "ok", checks[name]
    assert "CAP_BPF, CAP_PERFMON" in checks["privileges"].detail
    assert checks["isolated_cpus"].status == "ok"
    assert "6 isolated: 2-7" in checks["isolated_cpus"].detail
    assert checks["tracefs"].status == "ok"
    assert "/sys/kernel/tracing" in checks["tracefs"].detail


def test_noisy_unprivileged_machine(tmp_path: Path) -> None:
    cpu = "sys/devices/system/cpu"
    write(tmp_path, "proc/self/status", f"Name:\tx\nCapEff:\t{NO_CAPS}")
    write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "2")
    write(tmp_path, f"{cpu}/cpu0/cpufreq/scaling_governor", "powersave")
    write(tmp_path, f"{cpu}/cpufreq/boost", "1")
    write(tmp_path, f"{cpu}/isolated", "")
    write(tmp_path, "proc/mounts", "proc /proc proc rw 0 0")
    checks = by_name(tmp_path)
    # Even root without capabilities (a locked-down container) cannot load BPF.
    assert checks["privileges"].status == "missing"
    assert ("root" if os.geteuid() == 0 else f"uid {os.geteuid()}") in checks["privileges"].detail
    assert "CAP_BPF" in checks["privileges"].fix
    assert checks["btf"].status == "missing"
    assert checks["perf_event_paranoid"].status == "warn"
    assert "perf_event_paranoid=-1" in checks["perf_event_paranoid"].fix
    assert checks["governor"].status == "warn"
    assert "powersave" in checks["governor"].detail
    assert "performance" in checks["governor"].fix
    assert checks["turbo"].status == "warn"
    assert "boost" in checks["turbo"].fix
    assert checks["smt"].status == "warn"  # not exposed at all
    assert checks["isolated_cpus"].status == "warn"
    assert "isolcpus=" in checks["isolated_cpus"].fix
    assert checks["tracefs"].status == "missing"
    assert "mount -t tracefs" in checks["tracefs"].fix


def test_a_crashing_check_is_reported_and_fails_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(root: Path) -> Check:
        raise ValueError("unexpected content")

    monkeypatch.setattr(doctor, "CHECKS", [("btf", doctor.check_btf), ("broken", broken)])
    console = Console(record=True, width=100, file=io.StringIO())
    assert doctor_command(console, as_json=True) == 1
    checks = json.loads(console.export_text())
    assert [c["check"] for c in checks] == ["btf", "broken"]
    assert checks[1]["status"] == "error"
    assert "ValueError: unexpected content" in checks[1]["detail"]


def test_a_tool_wrapper_that_cannot_run_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "perf": "echo 'WARNING: perf not found for kernel 6.8.0-45' >&2; exit 2",
        "fio": "echo fio-3.36",
    }
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    checks = by_name(tmp_path)
    assert checks["perf"].status == "warn"
    assert "exit 2" in checks["perf"].detail and "perf not found" in checks["perf"].detail
    assert "linux-tools" in checks["perf"].fix
    assert checks["fio"].status == "ok"
    assert checks["fio"].detail.endswith("fio: fio-3.36")
    assert checks["clang"].status == "missing"


def kernel_root(root: Path, release: str, btf: bytes, kallsyms: str, uprobes: bool) -> Path:
    write(root, "proc/self/status", f"Name:\tx\nCapEff:\t{BPF_AND_PERFMON}")
    write(root, "proc/sys/kernel/osrelease", release)
    (root / "sys/kernel/btf").mkdir(parents=True)
    (root / "sys/kernel/btf/vmlinux").write_bytes(btf)
    write(root, "proc/kallsyms", kallsyms)
    if uprobes:
        write(root, "sys/bus/event_source/devices/uprobe/type", "7")
    return root


STACK_HELPERS = "ffffffff814d02a0 T bpf_task_pt_regs\nffffffff814cea50 T bpf_get_current_task_btf"
TRACEPOINTS = b"\x9f\xeb\x01\x00\0btf_trace_sched_switch\0btf_trace_sched_waking\0"


def test_a_kernel_with_every_feature_the_probes_use(tmp_path: Path) -> None:
    checks = by_name(kernel_root(tmp_path, "6.1.0-50-amd64", TRACEPOINTS, STACK_HELPERS, True))
    assert checks["kernel"].status == "ok", checks["kernel"]
    assert checks["kernel"].detail == (
        "6.1.0-50-amd64; probes support >= 5.15; btf ok (5.4), atomics ok (5.12), tp_btf ok "
        "(5.5), user_stacks ok (5.15), uprobes ok (3.5)"
    )


def test_an_old_kernel_names_what_each_probe_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5.10: no BPF atomics, no bpf_task_pt_regs(), no BTF tracepoint for sched_waking, and
    this one has no uprobes."""
    root = kernel_root(tmp_path, "5.10.0-28-amd64", b"\0btf_trace_sched_switch\0", "", False)
    build = tmp_path / "build"
    build.mkdir()
    for name in ("sched", "futex", "offwake", "gc"):
        (build / name).write_text("#!/bin/sh\n")
        (build / name).chmod(0o755)
    monkeypatch.setenv("HARNESS_BPF_BUILD", str(build))
    checks = by_name(root)
    assert checks["kernel"].status == "warn"
    assert "atomics missing (5.12), tp_btf missing (5.5), user_stacks missing (5.15)" in (
        checks["kernel"].detail
    )
    assert "uprobes missing (3.5)" in checks["kernel"].detail
    lacks = "the kernel lacks "
    assert checks["probe sched"].status == "missing"
    assert checks["probe sched"].detail.startswith(lacks + "BPF atomic and/or")
    offwake = checks["probe offwake"]
    assert offwake.status == "missing"
    assert "BTF tracepoints (tp_btf) on sched_switch and sched_waking (Linux 5.5)" in offwake.detail
    assert "bpf_task_pt_regs(), for user stacks (Linux 5.15)" in offwake.detail
    assert offwake.fix == "a kernel >= 5.15 has every feature the probes use"


def test_a_missing_fallback_feature_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 5.12 kernel: futex counts waits without stacks, sched attaches to raw tracepoints."""
    root = kernel_root(tmp_path, "5.12.0", b"\0btf_trace_sched_waking\0", "", True)
    build = tmp_path / "build"
    build.mkdir()
    for name in ("sched", "futex"):
        (build / name).write_text("#!/bin/sh\n")
        (build / name).chmod(0o755)
    monkeypatch.setenv("HARNESS_BPF_BUILD", str(build))
    checks = by_name(root)
    assert checks["probe futex"].status == "warn"
    assert checks["probe futex"].detail.endswith("(Linux 5.15): it counts waits without stacks")
    assert checks["probe sched"].status == "warn"
    assert checks["probe sched"].detail.endswith(
        "(Linux 5.5): it attaches to raw tracepoints instead"
    )
