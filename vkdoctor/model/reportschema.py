"""A report read back (`diff`, `summary`) is held to vkdoctor/data/report.schema.json before any
of it is used: a field of the wrong type is an input error that names the field, never a crash.

The schema uses a small part of JSON Schema (type, properties, required, items, enum, const,
additionalProperties, minimum, minLength, minItems, pattern, oneOf and local $ref), and this
checks exactly that part (tests/test_reportfile.py fails on a keyword it does not know), iteratively: a report nested deeper than any real one is refused, not recursed into.
tests/test_reportfile.py holds it to the `jsonschema` package on real and mutated reports.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

#: deeper than any report vkdoctor writes (the probe's document is the deepest, about 8)
MAX_DEPTH = 64

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


@cache
def schema() -> dict[str, Any]:
    text = resources.files("vkdoctor").joinpath("data/report.schema.json").read_text("utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


def _type_ok(value: object, kinds: str | list[str]) -> bool:
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _TYPES[kind]):
            return True
    return False


def _name(value: object) -> str:
    for kind, types in _TYPES.items():
        if isinstance(value, types) and not (isinstance(value, bool) and kind != "boolean"):
            return kind
    return type(value).__name__


def _same(a: object, b: object) -> bool:
    """JSON equality: true and 1 are not the same value."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _field(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def problem(doc: object) -> str | None:
    """The first place where `doc` breaks the report schema, in words, or None."""
    return problem_under(doc, schema(), "")


def _one(
    value: object,
    node: dict[str, Any],
    where: str,
    depth: int,
    todo: list[tuple[object, dict[str, Any], str, int]],
) -> str | None:
    why = _here(value, node, where or "the report")
    if why or not isinstance(value, dict | list):
        return why
    if isinstance(value, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                todo.append((item, props[key], _field(where, key), depth + 1))
            elif extra is False:
                return f"{where or 'the report'} has a field no report has ({str(key)[:40]!r})"
            elif isinstance(extra, dict):
                todo.append((item, extra, _field(where, key), depth + 1))
    elif isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            todo.append((item, node["items"], f"{where}[{i}]", depth + 1))
    return None


def _here(value: object, node: dict[str, Any], where: str) -> str | None:
    """What is wrong with `value` itself against `node` (its children are judged after)."""
    if "oneOf" in node:
        if not any(problem_under(value, option) is None for option in node["oneOf"]):
            return f"{where} matches none of the forms a report allows ({_name(value)})"
        return None
    if "type" in node and not _type_ok(value, node["type"]):
        want = node["type"] if isinstance(node["type"], str) else " or ".join(node["type"])
        return f"{where} is {_name(value)}, not {want}"
    if "const" in node and not _same(value, node["const"]):
        return f"{where} is {json.dumps(value)[:40]}, not {json.dumps(node['const'])}"
    if "enum" in node and not any(_same(value, v) for v in node["enum"]):
        return (
            f"{where} is {json.dumps(value)[:40]}, not one of {', '.join(map(str, node['enum']))}"
        )
    if isinstance(value, (int, float)) and "minimum" in node and value < node["minimum"]:
        return f"{where} is {value}, below {node['minimum']}"
    if isinstance(value, str) and len(value) < node.get("minLength", 0):
        return f"{where} is shorter than {node['minLength']} characters"
    if isinstance(value, str) and "pattern" in node and not re.search(node["pattern"], value):
        return f"{where} is {json.dumps(value)[:40]}, not of the form {node['pattern']}"
    if isinstance(value, list) and len(value) < node.get("minItems", 0):
        return f"{where} has fewer than {node['minItems']} items"
    if isinstance(value, dict):
        missing = [k for k in node.get("required", ()) if k not in value]
        if missing:
            return f"{where} has no {missing[0]!r}"
    return None


def problem_under(value: object, node: dict[str, Any], where: str = "it") -> str | None:
    """`problem` for a part of a report against a part of the schema, walked with a stack."""
    root = schema()
    todo: list[tuple[object, dict[str, Any], str, int]] = [(value, node, where, 0)]
    while todo:
        item, sub, at, depth = todo.pop()
        if depth > MAX_DEPTH:
            return f"{at} is nested deeper than {MAX_DEPTH} levels"
        why = _one(item, _resolve(sub, root), at, depth, todo)
        if why:
            return why
    return None
