"""The import rules of docs/architecture.md, on every module of vkdoctor as ast reads it.

Every import counts: at the top, inside a function, under TYPE_CHECKING, and
`importlib.import_module("...")` with a literal name, and a literal "vkdoctor.module:attr" (how
cli.py names the commands it imports lazily). `from P import name` is an import of the module
P.name when there is one, else of P (a package's __init__ that runs first is not counted).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "vkdoctor"
DOC = REPO / "docs" / "architecture.md"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


_LAZY = re.compile(r"^(vkdoctor(?:\.\w+)+):\w+$")


def _literal_import(node: ast.Call) -> str | bool | None:
    """The module an importlib.import_module/__import__ call names; False when it is no such
    call, None when its name is not a literal."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in ("import_module", "__import__"):
        return False
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def imports_of(name: str, path: Path) -> tuple[set[str], list[str]]:
    """The vkdoctor modules `name` imports, and the dynamic imports it makes that no one can
    check (a name that is not a literal)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    unchecked: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            subs = [f"{target}.{alias.name}" for alias in node.names]
            found.update(s for s in subs if s in MODULES)
            if not all(s in MODULES for s in subs):
                found.add(target)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            lazy = _LAZY.match(node.value)
            if lazy:
                found.add(lazy.group(1))
        elif isinstance(node, ast.Call):
            literal = _literal_import(node)
            if literal is None:
                unchecked.append(f"{path.name}:{node.lineno}")
            elif literal:
                found.add(literal)
    if any(isinstance(n, ast.Constant) and _LAZY.match(str(n.value)) for n in ast.walk(tree)):
        unchecked = []  # the names it imports are its "module:attr" literals
    return {m for m in found if m in MODULES and m != name}, unchecked


GRAPH = {name: imports_of(name, path)[0] for name, path in MODULES.items()}


def layer_table() -> list[tuple[str, list[str], list[str]]]:
    """(layer, module patterns, what it may import) from the table in docs/architecture.md."""
    rows = []
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("| Layer | Modules | May import |")
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        layer, modules, may = (cell.strip() for cell in line.strip("|").split("|"))
        patterns = re.findall(r"`([^`]+)`", modules)
        allowed = [] if may == "—" else [a.strip() for a in may.split(",")]
        rows.append((layer, patterns, allowed))
    return rows


LAYERS = layer_table()
NAMES = [layer for layer, _, _ in LAYERS]


def layer_of(module: str) -> str:
    for layer, patterns, _ in LAYERS:
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return layer
    raise AssertionError(f"{module} is in no layer of docs/architecture.md")


def allowed(module: str, target: str) -> bool:
    here, there = layer_of(module), layer_of(target)
    if here == there:
        return True
    _, _, may = LAYERS[NAMES.index(here)]
    for entry in may:
        pattern = entry.strip("`")
        if entry.startswith("`") and fnmatch.fnmatchcase(target, pattern):
            return True
        if entry == there:
            return True
    return False


def test_the_table_names_real_layers_top_down() -> None:
    """Every layer a row may import is a row further down (or a module pattern), so the table
    itself has no cycle; every pattern matches a module."""
    assert NAMES[0] == "Face" and NAMES[-1] == "Model"
    for i, (layer, patterns, may) in enumerate(LAYERS):
        for entry in may:
            if not entry.startswith("`"):
                assert entry in NAMES[i + 1 :], f"{layer} may import {entry}, not a layer below"
        for p in patterns:
            assert any(fnmatch.fnmatchcase(m, p) for m in MODULES), f"{p} matches no module"


def test_no_module_imports_past_its_layer() -> None:
    wrong = sorted(
        f"{m} ({layer_of(m)}) imports {t} ({layer_of(t)})"
        for m, targets in GRAPH.items()
        for t in targets
        if not allowed(m, t)
    )
    assert wrong == []


def test_nothing_below_the_runner_imports_a_check() -> None:
    """Only the face and the runner import vkdoctor.checks; the checks may share their base."""
    wrong = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if layer_of(m) not in ("Face", "Runner", "Checks")
        for t in targets
        if t == "vkdoctor.checks" or t.startswith("vkdoctor.checks.")
    )
    assert wrong == []


#: check modules that import a helper of another check module; each one is to move to the facts
#: (or to the service it belongs to), so that a check imports only checks.base besides them
CHECK_TO_CHECK = {
    ("vkdoctor.checks.drivers", "vkdoctor.checks.libraries"),  # stale_manifest_remedy
    ("vkdoctor.checks.gpu", "vkdoctor.checks.drivers"),  # install_command
    ("vkdoctor.checks.libraries", "vkdoctor.checks.brokencopy"),  # broken_copy
    ("vkdoctor.checks.loadtest", "vkdoctor.checks.drivers"),  # hidden_drivers, install_command
    ("vkdoctor.checks.probe", "vkdoctor.checks.drivers"),  # hidden_drivers, install_command
}


def test_a_check_module_imports_no_other_check_module() -> None:
    """Besides checks.base (and the registry in checks/__init__), no new helper shared between
    check modules: what two checks share is a fact."""
    found = {
        (m, t)
        for m, targets in GRAPH.items()
        if m.startswith("vkdoctor.checks.")
        for t in targets
        if t.startswith("vkdoctor.checks.") and t != "vkdoctor.checks.base"
    }
    assert found - CHECK_TO_CHECK == set()
    assert CHECK_TO_CHECK - found == set(), "moved out: take it off CHECK_TO_CHECK"


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or through others (Tarjan's SCCs)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


def test_every_dynamic_import_names_its_module() -> None:
    unchecked = [u for name, path in MODULES.items() for u in imports_of(name, path)[1]]
    assert unchecked == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from vkdoctor.checks.libraries import label", {"vkdoctor.checks.libraries"}),
        ("def f():\n    from vkdoctor.checks import libraries", {"vkdoctor.checks.libraries"}),
        ("import importlib\nimportlib.import_module('vkdoctor.runner')", {"vkdoctor.runner"}),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import vkdoctor.render.text",
            {"vkdoctor.render.text"},
        ),
        ("from vkdoctor.loader import driver_scan", {"vkdoctor.loader"}),
        ("C = {'check': 'vkdoctor.commands.check:check'}", {"vkdoctor.commands.check"}),
    ],
)
def test_the_parser_sees_every_kind_of_import(
    tmp_path: Path, source: str, expected: set[str]
) -> None:
    """The rules above can fail: each kind of import is found (the module is a made-up one)."""
    path = tmp_path / "made_up.py"
    path.write_text(source + "\n")
    found, unchecked = imports_of("vkdoctor.made_up", path)
    assert found == expected and unchecked == []


def test_a_check_imported_from_below_is_caught() -> None:
    """What the rules say about an import that goes up: an overlay module importing a check."""
    assert not allowed("vkdoctor.overlay.describe", "vkdoctor.checks.libraries")
    assert not allowed("vkdoctor.closures.targets", "vkdoctor.overlay.plan")
    assert not allowed("vkdoctor.render.text", "vkdoctor.facts.report")
    assert allowed("vkdoctor.facts.report", "vkdoctor.overlay.plan")
