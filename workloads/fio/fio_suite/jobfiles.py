"""A job file as fio runs it here: the strategy's (or the user's) job file, checked line by
line as fio 3.33 reads it (init.c __parse_jobs_ini), its includes inlined, with options
appended to every job section.

fio's command-line job options land in the global section, before the job file's own, so a
job file's `[global]` or job section overrides them: the wrapper writes a derived job file
instead, with its options last in each job section (within a section the last value wins,
and a job section's value beats `[global]`'s). An `include`d file is checked like the job
file and written into the derived file in place of its `include` line, so fio reads no file
but the derived one: what it runs is what was checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fio_suite import confine
from fio_suite.confine import C_CNTRL, C_SPACE

# fio reads a job file with fgets(OPT_LEN_MAX): a longer line would reach it in pieces, the
# second one read as an option line of its own.
MAX_LINE = confine.OPT_LEN_MAX - 2
MAX_INCLUDE_DEPTH = 8

Option = tuple[str, str | None]  # name, value (None: a flag such as `thread`)


class JobFileError(Exception):
    """The job file cannot be used (unreadable, no job in it, an option refused)."""


def read_job_file(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise JobFileError(f"cannot read job file {path}: {reason}") from err


def is_comment(line: str) -> bool:
    """fio's is_empty_or_comment: blank, or `;` or `#` before anything else."""
    for char in line:
        if char in ";#":
            return True
        if char not in C_SPACE + C_CNTRL:
            return False
    return True


def section_name(line: str) -> str | None:
    """The section a line opens (fio: `[` first; the name is what follows, up to 255
    characters, less its last one, usually `]`), else None."""
    if is_comment(line) or not line.lstrip(C_SPACE).startswith("["):
        return None
    return confine.strip_end(line.lstrip(C_SPACE))[1:256][:-1]


def is_global(name: str) -> bool:
    return name.startswith("global")  # fio: strncmp(name, "global", 6)


def job_names(lines: Sequence[str]) -> list[str]:
    """The job sections, in order (every section but fio's global ones)."""
    names = [section_name(line) for line in lines]
    return [name for name in names if name is not None and not is_global(name)]


def checked_lines(path: Path, chain: tuple[Path, ...] = ()) -> list[str]:
    """The job file's lines, each option checked (confine), includes replaced by their
    files' checked lines. `chain`: the files including this one."""
    where_file = f"{path}: " if chain else ""
    out: list[str] = []
    for number, line in enumerate(read_job_file(path).split("\n"), 1):
        where = f"{where_file}line {number}"
        if len(line.encode()) > MAX_LINE:
            raise JobFileError(f"{where}: longer than fio reads as one line ({MAX_LINE} bytes)")
        if "\0" in line:
            raise JobFileError(f"{where}: a NUL byte")
        if is_comment(line):
            out.append(line)
            continue
        text = confine.strip_end(line.lstrip(C_SPACE))
        if text.startswith("["):
            if chain:
                raise JobFileError(f"{where}: a section in an included file (fio allows none)")
            out.append(line)
        elif text.startswith("include"):  # fio: strncmp, and the name from the 9th character
            out.extend(_included(text[len("include") + 1 :], path, chain, where))
        else:
            try:
                confine.check_line(text)
            except confine.Refused as err:
                raise JobFileError(f"{where}: {err}") from None
            out.append(line)  # as written: fio expands its ${VAR} as checked
    return out


def _included(name: str, path: Path, chain: tuple[Path, ...], where: str) -> list[str]:
    target = path.parent / name  # an absolute name stays itself
    here = (*chain, path.resolve())
    if target.resolve() in here:
        raise JobFileError(f"{where}: include {name}: the file includes itself")
    if len(here) > MAX_INCLUDE_DEPTH:
        raise JobFileError(f"{where}: include {name}: more than {MAX_INCLUDE_DEPTH} levels")
    return [f"; include {target}", *checked_lines(target, here)]


def option_line(option: Option) -> str:
    name, value = option
    return name if value is None else f"{name}={value}"


def derive(path: Path, options: Sequence[Option]) -> str:
    """The job file at `path`, checked, includes inlined, `options` appended to every job
    section."""
    lines = checked_lines(path)
    if not job_names(lines):
        raise JobFileError("the job file defines no job (a [section] other than [global])")
    appended = [option_line(option) for option in options]
    out: list[str] = []
    in_job = False
    for line in lines:
        name = section_name(line)
        if name is not None:
            if in_job:
                out.extend(appended)
            in_job = not is_global(name)
        out.append(line)
    if in_job:
        out.extend(appended)
    return "\n".join(out) + "\n"


def parse_options(text: str) -> list[Option]:
    """`fio_options`: space-separated `name=value` or `name` (a flag), e.g.
    `norandommap randrepeat=0`; each checked as a job file's line would be."""
    options: list[Option] = []
    for word in text.split():
        confine.check_line(word)
        name, value = confine.split_option(word)
        if not name:
            raise ValueError(f"'{word}' has no option name")
        options.append((name, value))
    return options
