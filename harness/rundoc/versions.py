"""Older run.json versions, read as the current one (docs/run-json.md, "Versions"): a run
directory from an older harness stays readable rather than refused."""

from __future__ import annotations

from typing import Any

from harness.rundoc.model import SCHEMA_VERSION, Metric

READABLE = (1, SCHEMA_VERSION)


def upgraded(doc: dict[str, Any]) -> dict[str, Any]:
    """A run.json object of a READABLE version, as version SCHEMA_VERSION."""
    if doc.get("schema_version") == 1:
        return _from_1(doc)
    return doc


def _from_1(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had the keys of version 2, but its metrics kept every key of the workload's
    declaration; version 2 keeps those the model names."""
    metrics = doc.get("metrics")
    if isinstance(metrics, list):
        metrics = [
            {key: value for key, value in metric.items() if key in Metric.model_fields}
            if isinstance(metric, dict)
            else metric
            for metric in metrics
        ]
    return doc | {"schema_version": 2, "metrics": metrics}
