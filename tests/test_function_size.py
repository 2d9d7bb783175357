"""No function of vkdoctor is longer than 100 lines (docs/architecture.md, "Small functions").

Every function and method of every module, as ast reads it (`end_lineno - lineno + 1`, the
decorators not counted). The few still longer are listed in ALLOWED with their length today:
one may shrink (then its entry must follow it down, or go once it fits), never grow, and no new
one may join. The goal is an empty list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "vkdoctor"
LIMIT = 100

#: "path::qualified name": its length today. Left for later: these hold the fix texts of
#: checks/*.py and packages/skew.py, which are being rewritten as data (issue 15, item 5);
#: they are split after that.
ALLOWED: dict[str, int] = {
    "vkdoctor/checks/layers.py::ExplicitLayersFromEnvironment.run": 109,
    "vkdoctor/checks/libraries.py::LibraryOpens.run": 139,
    "vkdoctor/checks/loadtest.py::DeviceAvailable.run": 119,
    "vkdoctor/checks/overlay.py::OverlayFix.run": 110,
    "vkdoctor/packages/skew.py::explain_missing_soname": 143,
}


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


def test_no_function_is_longer_than_the_limit_or_its_allowance():
    long = function_lengths()
    new = {k: v for k, v in long.items() if k not in ALLOWED}
    grown = {k: (ALLOWED[k], v) for k, v in long.items() if k in ALLOWED and v > ALLOWED[k]}
    assert not new, f"functions over {LIMIT} lines: split them into named steps: {new}"
    assert not grown, f"allowed long functions that grew (allowed, now): {grown}"


def test_the_allowlist_follows_the_functions_down():
    """An entry for a function that is gone, fits now, or shrank is stale: lower or remove it,
    so that the list only ever shrinks."""
    long = function_lengths()
    stale = {k: (v, long.get(k)) for k, v in ALLOWED.items() if long.get(k) != v}
    assert not stale, f"update ALLOWED (allowed, now; None: it fits or is gone): {stale}"


def test_the_measure_sees_methods_and_nested_functions():
    """The walk counts a method by its class and a function inside another one."""
    source = "class A:\n    def m(self):\n        def inner():\n            pass\n"
    found = dict(_functions(ast.parse(source)))
    assert found == {"A.m": 3, "A.m.inner": 2}
