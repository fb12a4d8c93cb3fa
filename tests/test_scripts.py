"""Every script under scripts/, run for real in a small configuration."""

from __future__ import annotations

import fcntl
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from historyruns import write_night
from requirements import need, tool_problem

from harness.paths import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"
IO_BENCH = REPO_ROOT / "workloads" / "target" / "release" / "io-bench"
# Each script, and the tests that run it (test_every_script_is_run checks the list).
RUN_BY = {
    "bench-detection": "test_bench_detection_with_few_seeds",
    "bench-history": "test_bench_history_with_two_nights",
    "bench-startup": "test_bench_startup_with_one_call_each",
    "boot-check": "test_boot_check_loads_every_collector_on_debian_12s_kernel",
    "check-core": "test_check_core_on_the_committed_kernels",
    "check-venv-access.sh": "test_check_venv_access_on_the_venv",
    "install-system-deps.sh": "test_install_system_deps_changes_nothing_here",
    "io-vs-fio": "test_io_vs_fio_one_small_round",
    "kernel-btf": "test_kernel_btf_from_a_package",
    "nightly": "test_nightly_on_the_fixture_suites",
}


def run(
    argv: list[str | Path], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def one_error_line(done: subprocess.CompletedProcess[str], script: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"{script}: "), done.stderr


@pytest.mark.unit
def test_every_script_is_run() -> None:
    scripts = {p.name for p in SCRIPTS.iterdir() if p.name != "system-packages.txt"}
    assert scripts == set(RUN_BY)
    assert all(callable(globals().get(test)) for test in RUN_BY.values())


@pytest.mark.e2e
def test_io_vs_fio_one_small_round(tmp_path: Path) -> None:
    need(tool_problem("fio", "fio"))
    if not IO_BENCH.is_file():
        pytest.fail(f"{IO_BENCH} is not built: run `make deps`")
    env = {**os.environ, "SIZE_MB": "4", "SECONDS_PER_RUN": "1", "PARALLELISM": "2"}
    file = tmp_path / "scratch"
    done = run([SCRIPTS / "io-vs-fio", "psync", "0", "1", file], env)
    assert done.returncode == 0, done.stderr
    match = re.fullmatch(
        r"psync direct=0 round 1: io (\d+) IOPS, fio (\d+) IOPS, io/fio ([\d.]+)\n"
        r"psync direct=0 median io/fio over 1 rounds: ([\d.]+)\n",
        done.stdout,
    )
    assert match, done.stdout
    io, fio, ratio = int(match[1]), int(match[2]), float(match[3])
    assert io > 0 and fio > 0
    assert ratio == pytest.approx(io / fio, abs=1e-3)
    assert match[4] == match[3]  # the median of one round is that round
    assert file.stat().st_size == 4 << 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scratch"]  # no partial file left


@pytest.mark.unit
def test_io_vs_fio_never_overwrites_a_file_it_did_not_make(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("mine\n")
    done = run([SCRIPTS / "io-vs-fio", "psync", "0", "1", precious], {**os.environ, "SIZE_MB": "4"})
    one_error_line(done, "io-vs-fio")
    assert precious.read_text() == "mine\n"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("args", "size_mb"),
    [
        (["psync", "0", "0"], "4"),
        (["psync", "0", "x"], "4"),
        (["psync", "0", "1"], "257"),
        (["psync", "0", "1"], "08"),
        (["aio", "0", "1"], "4"),
        (["psync", "2", "1"], "4"),
    ],
)
def test_io_vs_fio_refuses_bad_input(tmp_path: Path, args: list[str], size_mb: str) -> None:
    file = tmp_path / "scratch"
    done = run([SCRIPTS / "io-vs-fio", *args, file], {**os.environ, "SIZE_MB": size_mb})
    one_error_line(done, "io-vs-fio")
    assert not file.exists()


@pytest.mark.unit
def test_bench_detection_with_few_seeds(tmp_path: Path) -> None:
    """Synthetic rows, and recorded rows from three nights of two timers cells (5 repeats with
    1% noise, as historyruns writes them): every figure within its seeds, the synthetic ones
    as the 100 seeds give them (docs/dashboard.md)."""
    rng = np.random.default_rng(1)
    for n in range(3):
        write_night(tmp_path / "runs", n, {("none", 64): 1000.0, ("tokio", 64): 800.0}, rng)
    done = run([sys.executable, SCRIPTS / "bench-detection", "3", "--recorded", tmp_path / "runs"])
    assert done.returncode == 0, done.stderr
    five, ten, recorded_five, recorded_ten = json.loads(done.stdout)
    assert [r["repeats"] for r in (five, ten, recorded_five, recorded_ten)] == [5, 10, 5, 10]
    assert recorded_five["noise"] == f"recorded: 2 series of timers from {tmp_path / 'runs'}"
    for figures in (five, ten, recorded_five, recorded_ten):
        for height in ("step_3pct", "step_10pct"):
            assert {f["of"] for f in figures[height].values()} == {3}
            assert all(0 <= f["hits"] <= 3 for f in figures[height].values())
        noise = figures["pure_noise_3_series_x_200_nights"]
        assert all(f["events"] >= 0 and f["ci95"][1] > 0 for f in noise.values())
        # 1% noise, 10 repeats: a 10% step is flagged the night it lands, confirmed or not.
        if figures["repeats"] == 10:
            assert figures["step_10pct"]["flagged_at_its_night"]["hits"] == 3
            assert figures["step_10pct"]["flagged_at_its_night_confirmed"]["hits"] == 3
    for figures in (five, ten):
        # As for the 100 seeds: no false event stands, every drift is flagged in 30 runs.
        assert figures["pure_noise_3_series_x_200_nights"]["standing_after_the_last_night"] == {
            "events": 0,
            "ci95": [0.0, 3.7],
        }
        assert figures["drift_flagged_within_30_runs"]["hits"] == 3
        assert 0 < figures["drift_delay_median_runs"] <= figures["drift_delay_max_runs"] <= 30
    assert ten["step_3pct"]["found_at_its_run_after_40_more"]["hits"] == 3


@pytest.mark.unit
@pytest.mark.parametrize(
    "args",
    [
        ["3", "--suite", "timers"],
        ["3", "--only-recorded"],
        ["3", "--recorded"],
        ["3", "--recorded", "{tmp}/empty"],
        ["3", "--recorded", "{tmp}/none.sqlite"],
        ["3", "--recorded", "{tmp}/runs", "--suite", "nope"],
        ["3", "--recorded", "{tmp}/runs", "--metric", "nope"],
        ["3", "--recorded", "{tmp}/one"],
    ],
)
def test_bench_detection_refuses_paths_without_recorded_noise(
    tmp_path: Path, args: list[str]
) -> None:
    """Without recorded runs, or without a series of two runs: one line and exit 2."""
    (tmp_path / "empty").mkdir()
    rng = np.random.default_rng(1)
    for n in range(2):
        write_night(tmp_path / "runs", n, {("none", 64): 1000.0}, rng)
    write_night(tmp_path / "one", 0, {("none", 64): 1000.0}, rng)
    argv = [arg.format(tmp=tmp_path) for arg in args]
    one_error_line(run([sys.executable, SCRIPTS / "bench-detection", *argv]), "bench-detection")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("bench-detection", ["0"]),
        ("bench-history", ["x"]),
        ("bench-history", ["2", "3"]),
        ("bench-startup", ["0"]),
        ("bench-startup", ["1", "2"]),
    ],
)
def test_bench_scripts_refuse_bad_input(script: str, args: list[str]) -> None:
    one_error_line(run([sys.executable, SCRIPTS / script, *args]), script)


@pytest.mark.unit
def test_bench_startup_with_one_call_each(tmp_path: Path) -> None:
    done = run(
        [sys.executable, SCRIPTS / "bench-startup", "1"], {**os.environ, "TMPDIR": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr
    rows = {line[:34].strip(): line[34:].split() for line in done.stdout.splitlines()[2:]}
    assert set(rows) == {
        f"{Path(sys.executable).name} -c pass",
        "harness list (first: describes)",
        "harness --help",
        "harness list (kept)",
        "harness run --help",
        "harness run, refused by its plan",
        "harness run: start to 1st repeat",
    }
    for figures in rows.values():  # wall, cpu, min, max, x python
        assert len(figures) == 5 and float(figures[0]) > 0 and float(figures[4]) > 0
    assert list(tmp_path.iterdir()) == []  # its temporary folder removed


@pytest.mark.unit
def test_bench_history_with_two_nights(tmp_path: Path) -> None:
    done = run(
        [sys.executable, SCRIPTS / "bench-history", "2"], {**os.environ, "TMPDIR": str(tmp_path)}
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert (figures["nights"], figures["runs"], figures["series"]) == (2, 6, 600)
    for step in ("import", "dashboard", "import_one_night", "dashboard_rebuild"):
        assert figures[step]["wall_s"] >= 0 and figures[step]["cpu_s"] >= 0
    assert figures["files"] > 600  # a page per series, and the suites' pages
    assert 0 < figures["largest_file_bytes"] < 5 << 20
    assert list(tmp_path.iterdir()) == []  # its temporary folder removed


@pytest.mark.e2e
def test_nightly_on_the_fixture_suites(harness_env: dict[str, str]) -> None:
    """`make nightly` (deps, bench, import, dashboard, regressions) on the fixture suites."""
    results = Path(harness_env["HARNESS_RESULTS"])
    done = run([SCRIPTS / "nightly"], {**harness_env, "QUICK": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr
    (log,) = (results / "nightly").glob("*.log")
    assert done.stderr.startswith(f"nightly: log {log}\n"), done.stderr
    text = log.read_text()
    assert text.startswith("nightly: started ") and "no open regressions" in text
    assert re.search(r"^nightly: finished \S+, exit status 0$", text, re.M), text
    # The log's end is shown as well.
    assert done.stderr.endswith("".join(text.splitlines(keepends=True)[-20:]))
    assert len(list((results / "runs").iterdir())) == 1
    assert (results / "history.sqlite").is_file()
    assert (results / "dashboard" / "index.html").is_file()


@pytest.mark.unit
def test_nightly_does_nothing_while_another_holds_the_lock(harness_env: dict[str, str]) -> None:
    logs = Path(harness_env["HARNESS_RESULTS"]) / "nightly"
    logs.mkdir(parents=True)
    with (logs / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = run([SCRIPTS / "nightly"], harness_env, timeout=60)
    assert done.returncode == 75, done.stderr
    assert done.stderr == f"nightly: another nightly holds {logs}/.lock; nothing done\n"
    assert [p.name for p in logs.iterdir()] == [".lock"]


def machine_state() -> dict[str, str]:
    """What install-system-deps.sh could change: packages, Rust components, tracefs."""
    dpkg = run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${Status}\n"])
    state = {"dpkg": dpkg.stdout}
    if tool_problem("rustup", "rustup") is None:
        state["rustup"] = run(["rustup", "component", "list", "--installed"]).stdout
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    state["tracefs"] = "\n".join(line for line in mounts if " tracefs " in line)
    return state


@pytest.mark.e2e
def test_install_system_deps_changes_nothing_here() -> None:
    """On this machine, set up by `make deps`, it finds everything there and installs nothing."""
    need(tool_problem("dpkg-query", "dpkg"))
    listed = (SCRIPTS / "system-packages.txt").read_text().splitlines()
    wanted = [line.strip() for line in listed if line.strip() and not line.startswith("#")]
    status = run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n", *wanted])
    missing = [p for p in wanted if f"{p} install ok installed" not in status.stdout]
    need(f"packages not installed here: {' '.join(missing)} (make deps)" if missing else None)
    before = machine_state()
    done = run([SCRIPTS / "install-system-deps.sh"])
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("", "")
    assert machine_state() == before


def private_dir(python: Path) -> Path | None:
    """The first folder above the interpreter that other users cannot enter, if any."""
    for folder in python.parents:
        if folder != Path("/") and not folder.stat().st_mode & 0o001:
            return folder
    return None


@pytest.mark.unit
def test_check_venv_access_on_the_venv() -> None:
    venv = REPO_ROOT / ".venv"
    if not venv.is_dir():
        pytest.fail(f"{venv} is missing: run `make python-env`")
    done = run([SCRIPTS / "check-venv-access.sh", venv])
    assert done.returncode == 0 and done.stdout == ""
    python = Path(os.path.realpath(venv / "bin" / "python"))
    folder = private_dir(python)
    if folder is None:
        assert done.stderr == ""
    else:
        assert done.stderr.startswith(f"note: {venv}/bin/harness runs for "), done.stderr
        assert f"Python {python} is under {folder}, which other users" in done.stderr


@pytest.mark.unit
def test_check_venv_access_names_a_private_interpreter(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    python = private / "python3"
    python.write_text("")
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").symlink_to(python)
    done = run([SCRIPTS / "check-venv-access.sh", tmp_path / "venv"])
    assert done.returncode == 0 and done.stdout == ""
    assert f"its Python {python} is under {private}, which other users cannot enter" in " ".join(
        done.stderr.split()
    )


BPF_DIR = REPO_ROOT / "bpf"
OTHER_KERNELS = ("debian-6.1.0-50-amd64", "debian-6.1.0-50-arm64")
COLLECTORS = ("sched", "futex", "gc", "offwake")


def bpf_toolchain_problem() -> str | None:
    return (
        tool_problem("bpftool", "bpftool")
        or tool_problem("clang", "clang")
        or tool_problem("llvm-objdump", "llvm")
    )


@pytest.mark.bpf
def test_check_core_on_the_committed_kernels() -> None:
    """Every collector's relocations and attach targets resolve on Debian 12's 6.1 kernel of
    both architectures (and the running kernel), whose BTF differs from the headers' 6.12."""
    need(bpf_toolchain_problem())
    done = run([SCRIPTS / "check-core"])
    assert done.returncode == 0, done.stdout + done.stderr
    for kernel in OTHER_KERNELS:
        arch = "arm64" if kernel.endswith("arm64") else "x86"
        for collector in COLLECTORS:
            line = re.search(
                rf"^{collector} +{arch} +{kernel}: (\d+) relocations .*, ok$", done.stdout, re.M
            )
            assert line, (collector, kernel, done.stdout)
            assert int(line[1]) > 0  # each collector reads kernel structures
    assert "the running kernel" in done.stdout


@pytest.mark.bpf
def test_check_core_names_a_field_an_older_kernel_lacks(tmp_path: Path) -> None:
    """A program that reads task_struct.bpf_net_context (6.12's header has it, 6.1 has not)
    compiles, and check-core fails naming the collector, the field and the kernel."""
    need(bpf_toolchain_problem())
    bpf = tmp_path / "bpf"
    shutil.copytree(BPF_DIR, bpf, ignore=shutil.ignore_patterns("build"))
    with (bpf / "sched.bpf.c").open("a") as source:
        source.write(
            '\nSEC("tp_btf/sched_switch")\nint hb_newer(u64 *ctx)\n{\n'
            "\tstruct task_struct *task = bpf_get_current_task_btf();\n\n"
            "\treturn BPF_CORE_READ(task, bpf_net_context) != 0;\n}\n"
        )
    kernel = BPF_DIR / "vmlinux" / "kernels" / f"{OTHER_KERNELS[0]}.btf.xz"
    done = run([SCRIPTS / "check-core", "--bpf", bpf, kernel])
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(
        rf"^check-core: sched \(x86\) on {OTHER_KERNELS[0]}: program 'tp_btf/sched_switch' "
        r"relocation #\d+ <byte_off> struct task_struct\.bpf_net_context does not resolve$",
        done.stderr,
        re.M,
    ), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr  # the other collectors still resolve


@pytest.mark.unit
def test_kernel_btf_from_a_package(tmp_path: Path) -> None:
    """A kernel package whose vmlinuz carries the kernel (and its BTF) in an xz payload, as an
    x86 bzImage does, gives back that BTF byte for byte."""
    need(tool_problem("dpkg-deb", "dpkg") or tool_problem("bpftool", "bpftool"))
    btf = lzma.decompress(
        (BPF_DIR / "vmlinux" / "kernels" / f"{OTHER_KERNELS[0]}.btf.xz").read_bytes()
    )
    kernel = b"\x7fELF" + os.urandom(4096) + btf + os.urandom(4096)
    package = tmp_path / "pkg"
    (package / "boot").mkdir(parents=True)
    (package / "DEBIAN").mkdir()
    (package / "DEBIAN" / "control").write_text(
        "Package: linux-image-test\nVersion: 1\nArchitecture: amd64\n"
        "Maintainer: tests <t@localhost>\nDescription: a kernel for the test\n"
    )
    setup = b"MZ" + bytes(510) + b"HdrS" + bytes(1000)  # what precedes a bzImage's payload
    (package / "boot" / "vmlinuz-test").write_bytes(setup + lzma.compress(kernel, lzma.FORMAT_XZ))
    deb = tmp_path / "linux-image-test.deb"
    subprocess.run(["dpkg-deb", "--build", package, deb], capture_output=True, check=True)
    out = tmp_path / "out.btf"
    done = run([sys.executable, SCRIPTS / "kernel-btf", deb, out])
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == btf


@pytest.mark.bpf
def test_boot_check_loads_every_collector_on_debian_12s_kernel() -> None:
    """Debian 12's kernel (6.1) booted in QEMU: every collector loads under its verifier and
    counts the Go target's events. Before hb_log2_slot() worked in 64 bits, sched, futex and gc
    were refused there ("math between map_value pointer and register with unbounded min
    value") while this machine's 6.18 took them."""
    need(
        bpf_toolchain_problem()
        or tool_problem("qemu-system-x86_64", "qemu-system-x86")
        or tool_problem("busybox", "busybox-static")
        or tool_problem("apt-get", "apt")
    )
    if os.uname().machine != "x86_64":
        need(f"boot-check boots x86_64 kernels; this machine is {os.uname().machine}")
    build = run(["make", "-C", BPF_DIR])
    assert build.returncode == 0, build.stderr
    done = run([SCRIPTS / "boot-check"], timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    labels = ["sched", "futex", "futex --no-stacks", "offwake", "gc"]
    assert [line.split(" on ")[0] for line in lines] == labels, done.stdout
    for line in lines:
        assert re.match(r"[\w -]+ on 6\.1\.\d+-\d+-amd64: loads and counts: exit 0 \{", line), line
