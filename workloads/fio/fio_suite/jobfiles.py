"""A job file as fio runs it here: the strategy's (or the user's) job file with options
appended to every job section.

fio's command-line job options land in the global section, before the job file's own, so a
job file's `[global]` or job section overrides them: the wrapper writes a derived job file
instead, with its options last in each job section (within a section the last value wins,
and a job section's value beats `[global]`'s). Relative `include` paths are made absolute so
that the derived file, written elsewhere, includes the same files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_SECTION = re.compile(r"^\s*\[([^\]]+)\]")
_INCLUDE = re.compile(r"^(\s*include\s+)(\S.*?)\s*$")

Option = tuple[str, str | None]  # name, value (None: a flag such as `thread`)


class JobFileError(Exception):
    """The job file cannot be used (unreadable, or no job in it)."""


def read_job_file(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise JobFileError(f"cannot read job file {path}: {reason}") from err


def job_names(text: str) -> list[str]:
    """The job sections of a job file, in order (every section but `[global]`)."""
    names = []
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match and match.group(1).strip() != "global":
            names.append(match.group(1).strip())
    return names


def option_line(option: Option) -> str:
    name, value = option
    return name if value is None else f"{name}={value}"


def derive(text: str, base_dir: Path, options: Sequence[Option]) -> str:
    """`text` with `options` appended to every job section and includes made absolute."""
    if not job_names(text):
        raise JobFileError("the job file defines no job (a [section] other than [global])")
    appended = [option_line(option) for option in options]
    out: list[str] = []
    in_job = False
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            if in_job:
                out.extend(appended)
            in_job = match.group(1).strip() != "global"
        out.append(_absolute_include(line, base_dir))
    if in_job:
        out.extend(appended)
    return "\n".join(out) + "\n"


def _absolute_include(line: str, base_dir: Path) -> str:
    match = _INCLUDE.match(line)
    if not match or Path(match.group(2)).is_absolute():
        return line
    return f"{match.group(1)}{base_dir / match.group(2)}"


def parse_options(text: str) -> list[Option]:
    """`fio_options`: space-separated `name=value` or `name` (a flag), e.g.
    `norandommap randrepeat=0`."""
    options: list[Option] = []
    for word in text.split():
        name, sep, value = word.partition("=")
        if not name:
            raise ValueError(f"'{word}' has no option name")
        options.append((name, value if sep else None))
    return options
