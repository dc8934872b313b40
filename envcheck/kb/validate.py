"""A small JSON Schema validator for the subset kb-entry.schema.json uses (no runtime dependency).

tests/kb/test_kb_tooling.py checks that it agrees with the `jsonschema` package on the fixtures.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from envcheck import resources

Path_ = tuple  # a JSON path: ("patterns", 0, "regex")

_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict, "array": list, "string": str, "boolean": bool,
    "integer": int, "number": (int, float), "null": type(None),
}


@functools.lru_cache(maxsize=1)
def entry_schema() -> dict:
    return json.loads(resources.schema_path("kb-entry").read_text(encoding="utf-8"))


def errors(value: Any, schema: dict, path: Path_ = ()) -> Iterator[tuple[Path_, str, str]]:
    """Yield (path, keyword, message) for every violation of schema by value."""
    t = schema.get("type")
    if t and not _is_type(value, t):
        yield path, "type", f"must be {'an' if t[0] in 'aeiou' else 'a'} {t}, not {_type_name(value)}"
        return
    if "enum" in schema and value not in schema["enum"]:
        yield path, "enum", f"{value!r} is not one of: {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            yield path, "minLength", "must not be empty"
        if "pattern" in schema and not re.search(schema["pattern"], value):
            yield path, "pattern", f"{value!r} does not match {schema['pattern']}"
    if isinstance(value, list):
        yield from _array(value, schema, path)
    if isinstance(value, dict):
        yield from _object(value, schema, path)


def _array(value: list, schema: dict, path: Path_) -> Iterator[tuple[Path_, str, str]]:
    if len(value) < schema.get("minItems", 0):
        yield path, "minItems", f"needs at least {schema['minItems']} item(s)"
    if schema.get("uniqueItems"):
        seen: list = []
        for i, v in enumerate(value):
            if v in seen:
                yield path + (i,), "uniqueItems", f"{v!r} is listed twice"
            seen.append(v)
    if "items" in schema:
        for i, v in enumerate(value):
            yield from errors(v, schema["items"], path + (i,))


def _object(value: dict, schema: dict, path: Path_) -> Iterator[tuple[Path_, str, str]]:
    for key in schema.get("required", ()):
        if key not in value:
            yield path, "required", f"missing required key {key!r}"
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for key, v in value.items():
        if names is not None:
            for _p, _k, msg in errors(key, names, path + (key,)):
                yield path + (key,), "propertyNames", f"key {key!r}: {msg}"
        if key in props:
            yield from errors(v, props[key], path + (key,))
        elif extra is False:
            yield path + (key,), "additionalProperties", f"unknown key {key!r}"
        elif isinstance(extra, dict):
            yield from errors(v, extra, path + (key,))


def _is_type(value: Any, t: str) -> bool:
    if t in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[t])


def _type_name(value: Any) -> str:
    for name, _py in _TYPES.items():
        if name != "number" and _is_type(value, name):
            return name
    return type(value).__name__
