"""The published JSON Schemas (docs/reference/*.schema.json), checked with jsonschema."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"


@functools.cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((REFERENCE / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=FormatChecker())


def problems(name: str, doc: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator(name).iter_errors(doc)]


def check_status(doc: Any) -> None:
    """Every host's document of ``status --json`` (one, or a list) is valid."""
    for one in doc if isinstance(doc, list) else [doc]:
        assert problems("status", one) == [], json.dumps(one)[:2000]


def check_probe_line(line: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(line)
    assert problems("probe-line", doc) == [], line[:2000]
    return doc
