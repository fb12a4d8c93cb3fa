"""The collectors' build on any kernel: it never reads the host's BTF, a kernel header that
defines names we once used does not break it, our own names carry one prefix, and a collector
that does not compile fails `make deps` where BPF could run (bpf/vmlinux/README.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from requirements import need, tool_problem

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.bpf

BPF_DIR = REPO_ROOT / "bpf"
ARCH = {"x86_64": "x86", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
# What bpf/'s headers and programs defined at 49037d3, before the hb_ prefix: a kernel whose BTF
# had any of them (one had `enum { OP_MAP = 1, OP_UNMAP = 2, OP_WAIT = 3, OP_SIGNAL = 4 }`)
# broke the build.
OLD_TAGS = (
    "user_stack",
    "proc_key",
    "proc_stats",
    "wait_key",
    "wait_stats",
    "exit_counters",
    "thread_stats",
    "wakeup_key",
    "wakeup_val",
    "pair_slot",
    "offwake_key",
    "offwake_val",
    "stw_key",
    "stw_stats",
    "stw_pending",
    "walk",
    "frame",
    "wait_start",
    "waker",
    "thread",
)
OLD_ENUMS = (
    "futex_op_index",
    "futex_fail_index",
    "cpu_state",
    "stw_phase",
)
OLD_IDENTIFIERS = (
    "OP_WAIT",
    "OP_WAIT_BITSET",
    "OP_LOCK_PI",
    "OP_LOCK_PI2",
    "OP_WAIT_REQUEUE_PI",
    "OP_WAITV",
    "OP_WAKE",
    "NR_OPS",
    "FAIL_EAGAIN",
    "FAIL_ETIMEDOUT",
    "FAIL_EINTR",
    "FAIL_OTHER",
    "NR_FAILS",
    "STATE_UNKNOWN",
    "STATE_OFF",
    "STATE_ON",
    "STW_NONE",
    "STW_STOPPING",
    "STW_STARTING",
    "TASK_COMM_LEN",
    "MAX_SLOTS",
    "PID_MAX_LIMIT",
    "TARGET_WORDS",
    "MAX_STACK_DEPTH",
    "PAIR_SLOTS",
    "STATE_PREEMPTED",
    "WAKER_INTERRUPT",
    "STW_GC_MARK_TERM",
    "STW_GC_SWEEP_TERM",
    "RT_WORLDSTOP",
    "RT_NOW_PROBE",
    "MAX_USER_STACKS",
    "CHUNK",
    "KNOWN",
    "is_target",
    "count_lost",
    "window_delta",
    "log2_slot",
    "target_fork",
    "target_exit",
    "task_state",
    "user_stack",
    "pair_slot",
    "targets",
    "enabled",
    "window_start_ns",
    "lost_events",
    "stack_errors",
    "user_stacks",
    "walks",
)
# The headers shared by the programs (and their loaders): every name they define is prefixed.
SHARED_HEADERS = (
    "shared.h",
    "futex.h",
    "sched.h",
    "offwake.h",
    "gc.h",
    "common.bpf.h",
    "user_stack.bpf.h",
)
PREFIXED = re.compile(r"(hb_|HB_)\w+|\w+___\w+")  # ours, or a flavour of a kernel type


def toolchain_problem() -> str | None:
    return tool_problem("clang", "clang") or tool_problem("bpftool", "bpftool")


def make_objects(bpf: Path, output: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(bpf), "objects", f"OUTPUT={output}", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_objects_build_against_a_kernel_header_with_our_old_names(tmp_path: Path) -> None:
    need(toolchain_problem())
    header = (BPF_DIR / "vmlinux" / ARCH / "vmlinux.h").read_text()
    hostile = "".join(f"struct {tag} {{ int kernel_field; }};\n" for tag in OLD_TAGS)
    hostile += "".join(f"enum {tag} {{ {tag.upper()}_KERNEL = 7 }};\n" for tag in OLD_ENUMS)
    # (TASK_COMM_LEN is a kernel enumerator already: one definition of each is enough.)
    fresh = [n for n in OLD_IDENTIFIERS if not re.search(rf"^\t{n} = ", header, re.M)]
    hostile += "enum {\n" + "".join(f"\t{n} = {i + 1},\n" for i, n in enumerate(fresh))
    hostile += "};\n"
    # Before the header's closing #endif, as if the kernel had them.
    at = header.rindex("#endif")
    (tmp_path / ARCH).mkdir()
    (tmp_path / ARCH / "vmlinux.h").write_text(header[:at] + hostile + header[at:])
    done = make_objects(BPF_DIR, tmp_path / "out", f"VMLINUX_DIR={tmp_path}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("*.bpf.o")) == [
        "futex.bpf.o",
        "gc.bpf.o",
        "offwake.bpf.o",
        "sched.bpf.o",
    ]


def defined_names(source: str, header: bool) -> set[str]:
    """Type tags and enumerators; in a shared header also its macros, functions and globals."""
    names = set(re.findall(r"^(?:struct|union|enum) (\w+)\s*\{", source, re.M))
    for body in re.findall(r"^enum\s*\w*\s*\{(.*?)\}", source, re.M | re.S):
        names |= set(re.findall(r"^\s*(\w+)\s*(?:=[^,]*)?,", body, re.M))
    if header:
        names |= set(re.findall(r"^#define (\w+)", source, re.M))
        names |= set(re.findall(r"^static \w.*?\b(\w+)\(", source, re.M))
        names |= set(re.findall(r"^(?:volatile )?(?:bool|__u64|__u32) (\w+)", source, re.M))
        names |= set(re.findall(r"^\} (\w+) SEC\(", source, re.M))
    return names


def test_every_name_of_ours_has_the_prefix() -> None:
    unprefixed = {}
    for path in sorted(BPF_DIR.glob("*.h")) + sorted(BPF_DIR.glob("*.bpf.c")):
        if path.name not in SHARED_HEADERS and not path.name.endswith(".bpf.c"):
            continue  # a loader's own header (common.h, syms.h...) is never compiled for BPF
        names = defined_names(path.read_text(), path.name in SHARED_HEADERS)
        bare = sorted(n for n in names if not PREFIXED.fullmatch(n))
        if bare:
            unprefixed[path.name] = bare
    assert unprefixed == {}
    # The scan sees the names it must: a tag, an enumerator, a macro, a function, a map.
    seen = defined_names((BPF_DIR / "futex.h").read_text(), True)
    seen |= defined_names((BPF_DIR / "user_stack.bpf.h").read_text(), True)
    assert {"hb_proc_key", "HB_OP_WAIT", "HB_FUTEX_H", "hb_user_stack", "hb_walks"} <= seen


def broken_copy(folder: Path) -> Path:
    """bpf/ and the Makefile whose `bpf` target builds it, in folder, futex.bpf.c broken."""
    bpf = folder / "bpf"
    shutil.copytree(BPF_DIR, bpf, ignore=shutil.ignore_patterns("build"))
    shutil.copy(REPO_ROOT / "Makefile", folder / "Makefile")
    with (bpf / "futex.bpf.c").open("a") as source:
        source.write("\nint hb_broken(void) { return hb_no_such_name; }\n")
    return bpf


def make_bpf(bpf: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REQUIRE_BPF", "CI", "MAKEFLAGS")}
    return subprocess.run(
        [*prefix, "make", "--no-print-directory", "-C", str(bpf.parent), "bpf", f"BPF_DIR={bpf}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


COMPILER_ERROR = r"futex\.bpf\.c:\d+:\d+: error: use of undeclared identifier 'hb_no_such_name'"


def test_make_deps_fails_with_the_first_error_where_bpf_can_run(tmp_path: Path) -> None:
    """Without REQUIRE_BPF: this machine has kernel BTF and root, so a collector that does not
    compile is a defect of ours, not a machine without probes."""
    need(toolchain_problem())
    if os.geteuid() != 0 or not Path("/sys/kernel/btf/vmlinux").exists():
        need("needs root and kernel BTF: a machine that can load BPF")
    done = make_bpf(broken_copy(tmp_path))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-2:]
    assert re.fullmatch(
        r"deps: the eBPF collectors did not build, and this machine can load them: "
        + COMPILER_ERROR,
        last[0],
    ), done.stderr


def test_make_deps_goes_on_where_bpf_cannot_run() -> None:
    """As nobody (no capability), the same broken copy: the compiler's error, then one line
    that probes are unavailable, exit 0."""
    need(toolchain_problem() or tool_problem("setpriv", "util-linux"))
    if os.geteuid() != 0:
        need("needs root to become nobody")
    # Outside pytest's root-only tmp folders, so that nobody can read and build it.
    folder = Path(tempfile.mkdtemp(prefix="harness-bpf-build-"))
    try:
        bpf = broken_copy(folder)
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all")
        done = make_bpf(bpf, *nobody)
    finally:
        shutil.rmtree(folder)
    assert done.returncode == 0, done.stderr
    assert re.search(COMPILER_ERROR, done.stdout), done.stdout  # it did compile, and failed
    assert done.stderr.strip().splitlines()[-1] == (
        "deps: the eBPF collectors did not build; this machine cannot load them anyway "
        "(no kernel BTF, or no CAP_BPF): probes will be unavailable"
    )
