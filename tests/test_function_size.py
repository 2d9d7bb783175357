"""No function of vkdoctor is longer than 100 lines (docs/architecture.md, "Small functions").

Every function and method of every module, as ast reads it (`end_lineno - lineno + 1`, the
decorators not counted). There is no allowance: a function that grows past the limit is split
into named steps (a check's `run` into helpers named for what they decide, beside it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "vkdoctor"
LIMIT = 100


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + child.name
            assert child.end_lineno is not None
            yield name, child.end_lineno - child.lineno + 1
            yield from _functions(child, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, prefix + child.name + ".")
        else:
            yield from _functions(child, prefix)


def function_lengths() -> dict[str, int]:
    """Every function of vkdoctor longer than LIMIT lines, by "path::qualified name"."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(REPO).as_posix()
        for name, length in _functions(tree):
            if length > LIMIT:
                out[f"{where}::{name}"] = length
    return out


def test_no_function_is_longer_than_the_limit():
    long = function_lengths()
    assert not long, f"functions over {LIMIT} lines: split them into named steps: {long}"


def test_the_measure_sees_methods_and_nested_functions():
    """The walk counts a method by its class and a function inside another one."""
    source = "class A:\n    def m(self):\n        def inner():\n            pass\n"
    found = dict(_functions(ast.parse(source)))
    assert found == {"A.m": 3, "A.m.inner": 2}
