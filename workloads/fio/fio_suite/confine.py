"""What a job may ask of fio here: every job does its I/O on the harness's scratch file and
nothing else (the harness runs as root). fio 3.33's options (options.c, its engines'
options) that name files, directories, devices or commands, or grow the file, are refused,
and so are the I/O engines that do more than read and write the file they are given.

Option lines are read the way fio reads them (parse.c get_option, options.c
fio_option_dup_subs): `${VAR}` replaced from the environment first, the name is what
precedes the first `=` (trailing blanks cut), matched exactly against each option's name
or alias; the names here are compared in lower case, so a spelling fio itself would reject
is refused too rather than let through.
"""

from __future__ import annotations

import os
import re

# C's isspace() in the C locale: what fio's strip_blank_front/strip_blank_end remove.
C_SPACE = " \t\n\v\f\r"
C_CNTRL = "".join(map(chr, range(32))) + "\x7f"  # iscntrl()
OPT_LEN_MAX = 8192  # parse.h: the longest option line fio takes

_FILES = "names files or directories: every job uses the harness's scratch file"
_GROWS = "grows the scratch file beyond its size (the harness sized it)"
REFUSED = {
    "filename": _FILES,
    "directory": _FILES,
    "opendir": _FILES,
    "filename_format": _FILES,
    "write_iolog": _FILES,
    "read_iolog": _FILES,
    "iolog": _FILES,
    "replay_redirect": "names a device to replay on",
    "merge_blktrace_file": _FILES,
    "write_bw_log": _FILES,
    "write_lat_log": _FILES,
    "write_iops_log": _FILES,
    "write_hist_log": _FILES,
    "exec_prerun": "runs a command",
    "exec_postrun": "runs a command",
    "ioscheduler": "changes the disk's I/O scheduler (writes to /sys)",
    "cgroup": "creates cgroups",
    "cgroup_weight": "creates cgroups",
    "cgroup_nodelete": "creates cgroups",
    "profile": "adds fio's built-in jobs with their own files",
    "fill_device": _GROWS,
    "filesize": _GROWS,
    "file_append": _GROWS,
}

# options.c `.alias` (fio 3.33): the alias is the same option.
ALIASES = {
    "readwrite": "rw",
    "iodepth_batch_submit": "iodepth_batch",
    "iodepth_batch_complete": "iodepth_batch_complete_min",
    "io_limit": "io_size",
    "fill_fs": "fill_device",
    "fileoffset": "offset",
    "blocksize": "bs",
    "blockalign": "ba",
    "blocksize_range": "bsrange",
    "blocksize_unaligned": "bs_unaligned",
    "nr_files": "nrfiles",
    "timeout": "runtime",
    "iomem": "mem",
    "mem_align": "iomem_align",
    "ratemin": "rate_min",
    "ratecycle": "rate_cycle",
    "wait_for_previous": "stonewall",
    "disable_bw": "disable_bw_measurement",
    "ss": "steadystate",
    "ss_dur": "steadystate_duration",
    "ss_ramp": "steadystate_ramp_time",
}

# Engines that only do I/O on the file they are given (fio 3.33 engines/sync.c, libaio.c,
# io_uring.c, posixaio.c, mmap.c, splice.c, null.c). Refused among others: exec (runs a
# program), external:/x.so or a path (loads a library), filecreate/filestat/filedelete/
# dirdelete (make and remove paths), ftruncate/falloc/e4defrag (resize the file, or make a
# donor file), net/netsplice/rdma/http/nbd/rbd/rados (the network), sg/io_uring_cmd/mtd/
# dev-dax/libpmem/pmemblk (devices), cpuio (no I/O).
ENGINES = (
    "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap",
    "splice", "null",
)  # fmt: skip


class Refused(ValueError):
    """An option a job may not have here; the message names it and says why."""


def canonical(name: str) -> str:
    """The option `name` stands for: lower case, alias resolved."""
    lowered = name.strip(C_SPACE).lower()
    return ALIASES.get(lowered, lowered)


def expand_env(text: str) -> str:
    """fio's fio_option_dup_subs: every `${NAME}` replaced by the environment's value (fio
    runs with the wrapper's environment), in one pass, within fio's OPT_LEN_MAX bytes: a
    value longer than the room left is dropped, the text cut at the limit."""
    out: list[str] = []
    room = OPT_LEN_MAX
    i = 0
    while i < len(text) and room > 0:
        end = text.find("}", i) if text.startswith("${", i) else -1
        if end > 0:
            value = os.environ.get(text[i + 2 : end])
            if value is not None and len(value.encode()) <= room:
                out.append(value)
                room -= len(value.encode())
            i = end + 1
            continue
        out.append(text[i])
        room -= len(text[i].encode())
        i += 1
    return "".join(out)


def strip_end(text: str) -> str:
    """fio's strip_blank_end: cut at the first `;`, then at the first `#`, then trailing
    blanks and control characters."""
    text = text.split(";", 1)[0].split("#", 1)[0]
    return text.rstrip(C_SPACE + C_CNTRL)


def split_option(line: str) -> tuple[str, str | None]:
    """An option line (blanks and comments already cut) as fio splits it: the name before the
    first `=` (its trailing blanks cut), the value after it as written (None: a flag)."""
    name, sep, value = line.partition("=")
    return strip_end(name), value if sep else None


def check_line(line: str) -> None:
    """Check one option line as fio reads it: blanks and comments cut, `${VAR}` expanded."""
    name, value = split_option(expand_env(strip_end(line.lstrip(C_SPACE))))
    check_option(name, value)


def check_option(name: str, value: str | None) -> None:
    """Refused: an option that reaches beyond the scratch file, an engine not in ENGINES,
    memory backed by a file, a data pattern read from a file."""
    option = canonical(name)
    reason = REFUSED.get(option) or _family_reason(option)
    if reason:
        raise Refused(f"option '{name}' is not allowed here: it {reason}")
    text = value or ""
    if option == "ioengine" and text not in ENGINES:
        raise Refused(
            f"ioengine '{text}' is not allowed here: only engines that do I/O on the scratch "
            f"file alone are ({', '.join(ENGINES)})"
        )
    if option == "mem" and ":" in text:
        raise Refused(f"option '{name}={text}' is not allowed here: it maps a file (mmap:FILE)")
    if option in ("buffer_pattern", "verify_pattern") and "'" in text:
        raise Refused(
            f"option '{name}={text}' is not allowed here: 'NAME' reads the pattern from a file"
        )


def _family_reason(option: str) -> str | None:
    """Name families fio has or may add: refused whatever follows the prefix."""
    if option.startswith("cgroup"):
        return REFUSED["cgroup"]
    if option.startswith("exec_"):
        return REFUSED["exec_prerun"]
    if re.fullmatch(r"write_.*log", option):
        return _FILES
    return None
