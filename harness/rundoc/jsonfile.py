"""Reading and writing run.json: `compare`, `report` and the runner all go through here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.base import writes
from harness.errors import BadInput
from harness.rundoc import versions
from harness.rundoc.model import Record, RunDoc

# No run.json the harness writes nests deeper than a dozen levels; a deeper one is refused
# before anything walks it recursively (the validation, the metrics' flattening).
MAX_DEPTH = 64


class RunLoadError(BadInput):
    """A path that is not a readable run.json; the message names the path and the problem."""


def as_json(record: Record) -> dict[str, Any]:
    """The document (or one of its objects) as run.json holds it; a NaN or infinity (the
    interval of one sample) becomes null."""
    return record.model_dump(mode="json")


def dumps(run: RunDoc) -> str:
    """The text of run.json: every writer of the file goes through here, and here through
    the harness's one strict-JSON encoder."""
    return writes.dumps(as_json(run))


def load_run(path: Path) -> RunDoc:
    """The run.json of a run directory, or the file itself."""
    file = path / "run.json" if path.is_dir() else path
    if not file.is_file():
        where = "no run.json in this directory" if path.is_dir() else "no such file"
        raise RunLoadError(
            f"{path}: no run here: {where} (expected a run directory or its run.json)"
        )
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise RunLoadError(f"cannot read {file}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        raise RunLoadError(f"cannot read {file}: not text: {error.reason}") from error
    except json.JSONDecodeError as error:
        raise RunLoadError(f"cannot read {file}: not valid JSON: {error}") from error
    except RecursionError:
        raise RunLoadError(f"{file}: not a harness run.json (nested too deeply)") from None
    if _too_deep(doc):
        raise RunLoadError(
            f"{file}: not a harness run.json (nested deeper than {MAX_DEPTH} levels)"
        )
    if not isinstance(doc, dict):
        raise RunLoadError(f"{file}: not a harness run.json (not a JSON object)")
    if not isinstance(doc.get("cells"), list):
        raise RunLoadError(f"{file}: not a harness run.json (no list of cells)")
    version = doc.get("schema_version")
    if version not in versions.READABLE:
        readable = " and ".join(map(str, versions.READABLE))
        raise RunLoadError(
            f"{file}: schema_version {version!r}, this harness reads schema_version "
            f"{readable} (docs/run-json.md lists the versions)"
        )
    try:
        return RunDoc.model_validate(versions.upgraded(doc))
    except ValidationError as error:
        raise RunLoadError(f"{file}: not a valid run.json: {_first_problem(error)}") from None


def _too_deep(doc: Any) -> bool:
    """Whether a value of the document sits inside more than MAX_DEPTH arrays or objects
    (walked level by level, without recursion)."""
    level: list[Any] = [doc]
    for _ in range(MAX_DEPTH + 1):
        level = [
            inner
            for node in level
            if isinstance(node, dict | list)
            for inner in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return True


def _first_problem(error: ValidationError) -> str:
    problems = error.errors()
    first = problems[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return f"{where.lstrip('.') or 'the document'}: {first['msg']}{more}"
