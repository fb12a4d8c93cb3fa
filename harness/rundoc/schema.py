"""The JSON Schema of run.json, generated from the model; `make schema` writes it to
docs/run.schema.json, and a test keeps that file equal to what this module generates."""

from __future__ import annotations

import json
from typing import Any

from harness.paths import REPO_ROOT
from harness.rundoc.model import RunDoc

SCHEMA_FILE = REPO_ROOT / "docs" / "run.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def run_schema() -> dict[str, Any]:
    return {"$schema": DIALECT, **_tidy(RunDoc.model_json_schema())}


def _tidy(node: Any) -> Any:
    """Without pydantic's titles (the keys say it) and the `default: null` of keys that are
    absent rather than null; descriptions on one line."""
    if isinstance(node, dict):
        return {
            key: " ".join(value.split())
            if key == "description" and isinstance(value, str)
            else _tidy(value)
            for key, value in node.items()
            if not (key == "title" and isinstance(value, str))
            and not (key == "default" and value is None)
        }
    if isinstance(node, list):
        return [_tidy(value) for value in node]
    return node


def schema_text() -> str:
    return json.dumps(run_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
