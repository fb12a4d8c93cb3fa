"""The fio suite keeps every job on the harness's scratch file: options naming files,
directories, devices or commands, and engines that do more than I/O on the file, are refused
(one message naming the option) in a job file's every section, an included file,
`fio_options` and the per-option parameters, however fio would spell them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parent.parent / "workloads" / "fio"
sys.path.insert(0, str(SUITE))

from fio_suite import cli, confine, jobfiles, params  # noqa: E402

pytestmark = pytest.mark.unit

REFUSED_ENGINES = (
    "exec", "external:/tmp/x.so", "/tmp/x.so", "filecreate", "filestat", "filedelete",
    "dirdelete", "ftruncate", "falloc", "e4defrag", "net", "netsplice", "http", "rdma", "nbd",
    "rbd", "rados", "sg", "io_uring_cmd", "mtd", "dev-dax", "libpmem", "cpuio",
    "psync:/tmp/x.so", "psync,x", "PSYNC", " psync", "",
)  # fmt: skip
# (line, what the message names): every option fio 3.33 has that reaches beyond the file.
REFUSED = [
    ("filename=/etc/passwd", "'filename'"),
    ("directory=/etc", "'directory'"),
    ("opendir=/etc", "'opendir'"),
    ("filename_format=/etc/$jobname", "'filename_format'"),
    ("write_iolog=/etc/x", "'write_iolog'"),
    ("read_iolog=/etc/x", "'read_iolog'"),
    ("iolog=/etc/x", "'iolog'"),
    ("replay_redirect=/dev/sda", "'replay_redirect'"),
    ("merge_blktrace_file=/etc/x", "'merge_blktrace_file'"),
    ("write_bw_log=/etc/x", "'write_bw_log'"),
    ("write_lat_log=/etc/x", "'write_lat_log'"),
    ("write_iops_log=/etc/x", "'write_iops_log'"),
    ("write_hist_log=/etc/x", "'write_hist_log'"),
    ("exec_prerun=touch /x", "'exec_prerun'"),
    ("exec_postrun=touch /x", "'exec_postrun'"),
    ("ioscheduler=none", "'ioscheduler'"),
    ("cgroup=x", "'cgroup'"),
    ("cgroup_weight=100", "'cgroup_weight'"),
    ("cgroup_nodelete=1", "'cgroup_nodelete'"),
    ("profile=tiobench", "'profile'"),
    ("fill_device=1", "'fill_device'"),
    ("fill_fs=1", "'fill_fs'"),  # alias of fill_device
    ("filesize=1t", "'filesize'"),
    ("file_append=1", "'file_append'"),
    ("mem=mmaphuge:/etc/x", "'mem=mmaphuge:/etc/x'"),
    ("mem=mmapshared:/etc/x", "'mem=mmapshared:/etc/x'"),
    ("iomem=mmap:/etc/x", "'iomem=mmap:/etc/x'"),  # alias of mem
    ("buffer_pattern='/etc/shadow'", "buffer_pattern="),
    ("verify_pattern=0x00'/etc/shadow'", "verify_pattern="),
    # spellings: blanks around `=`, case, a trailing comment, a flag without value
    ("filename = /etc/passwd", "'filename'"),
    ("FileName=/etc/passwd", "'FileName'"),
    ("FILENAME\t=/etc/passwd ; comment", "'FILENAME'"),
    ("filename", "'filename'"),
    ("Exec_Prerun=x", "'Exec_Prerun'"),
    # engines: anything but I/O on the given file
    *[(f"ioengine={engine}", f"ioengine '{engine}'") for engine in REFUSED_ENGINES],
]
ALLOWED = [
    "rw=randread", "bs=4k", "direct=1", "iodepth=8", "mem=mmap", "mem=shm", "iomem=malloc",
    "buffer_pattern=0xdeadbeef", "description=filename=/etc/passwd", "norandommap",
    "write_barrier=0", "directory_ok=1", "size=1m",
    *[f"ioengine={engine}" for engine in confine.ENGINES],
]  # fmt: skip


def _job(tmp_path: Path, text: str, name: str = "job.fio") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("line", "named"), REFUSED)
@pytest.mark.parametrize("where", ["job", "global", "include"])
def test_a_job_file_reaching_beyond_the_scratch_file_is_refused(
    tmp_path: Path, line: str, named: str, where: str
) -> None:
    if where == "include":
        _job(tmp_path, f"rw=read\n  {line}\n", "inc.fio")
        text = "[global]\ninclude inc.fio\n[job]\nrw=read\n"
    else:
        text = f"[global]\nbs=4k\n{line if where == 'global' else ''}\n[job]\n"
        text += f"rw=read\n{line if where == 'job' else ''}\n"
    with pytest.raises(jobfiles.JobFileError, match="not allowed here") as err:
        jobfiles.derive(_job(tmp_path, text), [("thread", None)])
    assert named in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("line", "named"), [r for r in REFUSED if " " not in r[0].strip()])
def test_fio_options_reaching_beyond_the_scratch_file_are_refused(line: str, named: str) -> None:
    with pytest.raises(confine.Refused) as err:
        jobfiles.parse_options(line)
    assert named in str(err.value)


@pytest.mark.parametrize("line", ALLOWED)
def test_options_on_the_scratch_file_alone_pass(tmp_path: Path, line: str) -> None:
    jobfiles.derive(_job(tmp_path, f"[global]\n{line}\n[job]\n{line}\n"), [])
    if " " not in line:
        jobfiles.parse_options(line)


def test_environment_variables_are_expanded_as_fio_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WHAT", "filename")
    monkeypatch.setenv("ENGINE", "exec")
    monkeypatch.delenv("UNSET", raising=False)
    for line in ("${WHAT}=/etc/passwd", "file${UNSET}name=/etc/passwd", "ioengine=${ENGINE}"):
        with pytest.raises(jobfiles.JobFileError, match="not allowed here"):
            jobfiles.derive(_job(tmp_path, f"[job]\n{line}\n"), [])
        with pytest.raises(confine.Refused):
            jobfiles.parse_options(line)


def _request(*param: str) -> cli.Request:
    args = ["check", "--strategy", "randread-4k", "--duration-s", "1"]
    _, request = cli.parse_args([*args, *(f"--param={p}" for p in param)])
    assert request is not None
    return request


@pytest.mark.parametrize(
    ("param", "named"),
    [
        ("ioengine=exec", "ioengine 'exec'"),
        ("ioengine=external:/tmp/x.so", "ioengine 'external:/tmp/x.so'"),
        ("rw=read\nfilename=/etc/passwd", "control character"),
        ("bs=4k\rfilename=/etc/passwd", "control character"),
        ("fio_options=filename=/etc/passwd", "'filename'"),
        ("fio_options=norandommap exec_prerun=x", "'exec_prerun'"),
        ("fio_options=timeout=1", "timeout is set by the wrapper"),  # runtime's alias
    ],
)
def test_parameters_reaching_beyond_the_scratch_file_are_bad_input(param: str, named: str) -> None:
    with pytest.raises(params.BadInput) as err:
        cli.wrapper_options(_request(param), "/scratch")
    assert named in str(err.value)


def test_parameters_on_the_scratch_file_pass() -> None:
    options = cli.wrapper_options(_request("ioengine=io_uring", "fio_options=mem=mmap"), "/s")
    assert ("ioengine", "io_uring") in options and ("mem", "mmap") in options
    assert options[-7:][1] == ("filename", "/s")


def test_an_include_loop_a_section_in_an_include_and_long_lines_are_refused(
    tmp_path: Path,
) -> None:
    _job(tmp_path, "include loop.fio\n", "loop.fio")
    with pytest.raises(jobfiles.JobFileError, match="includes itself"):
        jobfiles.derive(_job(tmp_path, "[job]\ninclude loop.fio\n"), [])
    _job(tmp_path, "[other]\nrw=read\n", "sections.fio")
    with pytest.raises(jobfiles.JobFileError, match="a section in an included file"):
        jobfiles.derive(_job(tmp_path, "[job]\ninclude sections.fio\n"), [])
    # fio would read the line in pieces: the second one an option of its own
    long_line = "description=" + "x" * (jobfiles.MAX_LINE - 12) + "filename=/etc/passwd"
    with pytest.raises(jobfiles.JobFileError, match="longer than fio reads as one line"):
        jobfiles.derive(_job(tmp_path, f"[job]\n{long_line}\n"), [])
