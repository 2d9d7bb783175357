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


def rows_of(module: str) -> list[str]:
    """The rows of the table whose patterns match `module`."""
    return [
        layer
        for layer, patterns, _ in LAYERS
        if any(fnmatch.fnmatchcase(module, p) for p in patterns)
    ]


def layer_of(module: str) -> str:
    rows = rows_of(module)
    assert len(rows) == 1, f"{module} is in {len(rows)} rows of docs/architecture.md: {rows}"
    return rows[0]


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


def test_every_module_is_in_exactly_one_row() -> None:
    """No default row: a module nobody placed fails, and so does one two rows claim."""
    misplaced = {m: rows_of(m) for m in MODULES if len(rows_of(m)) != 1}
    assert misplaced == {}


def test_an_unlisted_module_is_in_no_row() -> None:
    assert rows_of("vkdoctor.nowhere") == []
    with pytest.raises(AssertionError, match="in 0 rows"):
        layer_of("vkdoctor.nowhere")


def test_ldso_emulation_imports_nothing_of_vulkan() -> None:
    """elf/ is glibc's ld.so: it may not import the loader, a check, a fact or a closure."""
    wrong = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if m.startswith("vkdoctor.elf")
        for t in targets
        if layer_of(t) not in ("ELF", "Model")
    )
    assert wrong == []


#: the folders of the analysis: what they compute does not depend on how fast it is computed
ANALYSIS = (
    "checks",
    "facts",
    "elf",
    "loader",
    "packages",
    "overlay",
    "closures",
    "machine",
    "render",
)


def test_the_analysis_imports_none_of_the_speed_machinery() -> None:
    """What outlives a run is asked of the Context's fact store (vkdoctor.model.factstore),
    which the command layer installs: no analysis module imports vkdoctor.speed."""
    wrong = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if m.split(".")[1:2] and m.split(".")[1] in ANALYSIS
        for t in targets
        if t == "vkdoctor.speed" or t.startswith("vkdoctor.speed.")
    )
    assert wrong == []


def test_only_the_face_and_the_runner_import_the_speed_machinery() -> None:
    """The speed machinery is one room: the face and the runner open it. The load test and the
    probe are handed how to get a child (`ctx.spawner`, a children.Spawner: the zygote's from
    the face)."""
    wrong = sorted(
        f"{m} ({layer_of(m)}) imports {t}"
        for m, targets in GRAPH.items()
        if layer_of(m) not in ("Face", "Runner", "Speed")
        for t in targets
        if layer_of(t) == "Speed"
    )
    assert wrong == []


def test_renderers_import_only_the_model() -> None:
    wrong = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if m.startswith("vkdoctor.render")
        for t in targets
        if layer_of(t) not in ("Render", "Model")
    )
    assert wrong == []


def test_no_module_imports_past_its_layer() -> None:
    wrong = sorted(
        f"{m} ({layer_of(m)}) imports {t} ({layer_of(t)})"
        for m, targets in GRAPH.items()
        for t in targets
        if not allowed(m, t)
    )
    assert wrong == []


def test_nothing_below_the_runner_imports_a_check() -> None:
    """Only the face, the runner and its speed machinery (a replay runs the checks that read
    what changes; the schedule names the package checks) import vkdoctor.checks; the checks may share their base."""
    wrong = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if layer_of(m) not in ("Face", "Runner", "Speed", "Checks")
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


# A check asks for a fact by name. Three rules, on every module under vkdoctor/checks/:
# 1. at run time the only vkdoctor.facts module it imports is the namespace itself
#    (`from vkdoctor import facts`); a facts submodule only under TYPE_CHECKING, for a type;
# 2. it calls no `.fact(`, `.known(` or `.set_fact(`: the memo is the namespace's business;
# 3. it imports no function that a name of vkdoctor.facts computes (found by identity, so a
#    re-export or a module alias such as `from vkdoctor import loader; loader.driver_scan` counts).

FACTS = PACKAGE / "facts" / "__init__.py"


def named_facts() -> dict[str, tuple[object, bool]]:
    """Each name vkdoctor/facts/__init__.py gives, with the function it imports lazily to compute
    it and whether its body memoizes that function itself (`ctx.fact`/`ctx.known`)."""
    import importlib

    out = {}
    for node in ast.parse(FACTS.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        (imp,) = [n for n in ast.walk(node) if isinstance(n, ast.ImportFrom)]
        (alias,) = imp.names
        compute = getattr(importlib.import_module(imp.module or ""), alias.name)
        memo = any(
            isinstance(n, ast.Attribute) and n.attr in ("fact", "known") for n in ast.walk(node)
        )
        out[node.name] = (compute, memo)
    return out


NAMED = named_facts()
_BY_COMPUTE = {id(compute): name for name, (compute, _) in NAMED.items()}
_MEMO_CALLS = ("fact", "known", "set_fact")


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


def _resolve(module: str, attr: str | None = None) -> object:
    import importlib

    try:
        obj: object = importlib.import_module(module)
    except ImportError:
        return None
    if attr is None:
        return obj
    if hasattr(obj, attr):
        return getattr(obj, attr)
    try:
        return importlib.import_module(f"{module}.{attr}")
    except ImportError:
        return None


def fact_violations(name: str, path: Path) -> list[str]:
    """Where the check module `name` asks for a fact other than by its name in vkdoctor.facts."""
    import types

    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    bound: dict[str, object] = {}  # local name -> what it is bound to by an import
    wrong: list[str] = []

    def judge(where: ast.AST, what: str, obj: object) -> None:
        if id(obj) in _BY_COMPUTE:
            wrong.append(f"{path.name}:{where.lineno} {what}: ask facts.{_BY_COMPUTE[id(obj)]}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vkdoctor.facts.") and id(node) not in typing_only:
                    wrong.append(f"{path.name}:{node.lineno} imports {alias.name}")
                if alias.asname:
                    bound[alias.asname] = _resolve(alias.name)
                else:
                    bound[alias.name.partition(".")[0]] = _resolve(alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if not module.startswith("vkdoctor"):
                continue
            for alias in node.names:
                obj = _resolve(module, alias.name)
                full = f"{module}.{alias.name}"
                sub = isinstance(obj, types.ModuleType) and obj.__name__.startswith(
                    "vkdoctor.facts."
                )
                if (module.startswith("vkdoctor.facts.") or sub) and id(node) not in typing_only:
                    wrong.append(f"{path.name}:{node.lineno} imports {full}")
                judge(node, f"imports {full}", obj)
                bound[alias.asname or alias.name] = obj
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MEMO_CALLS
        ):
            wrong.append(f"{path.name}:{node.lineno} {ast.unparse(node.func)}(...)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain = ast.unparse(node).split(".")
            obj = bound.get(chain[0])
            if not isinstance(obj, types.ModuleType) or obj.__name__ == "vkdoctor.facts":
                continue
            for attr in chain[1:]:
                obj = getattr(obj, attr, None)
            judge(node, f"uses {ast.unparse(node)}", obj)
    return sorted(set(wrong))


CHECK_MODULES = {m: p for m, p in MODULES.items() if m.startswith("vkdoctor.checks.")}


def test_a_check_asks_its_facts_by_name() -> None:
    wrong = [w for m, p in CHECK_MODULES.items() for w in fact_violations(m, p)]
    assert wrong == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from vkdoctor.loader import driver_scan",
            "made_up.py:1 imports vkdoctor.loader.driver_scan: ask facts.driver_scan",
        ),
        (
            "def f(ctx):\n    from vkdoctor.packages import inventory as inv\n    return inv(ctx)",
            "made_up.py:2 imports vkdoctor.packages.inventory: ask facts.package_inventory",
        ),
        (
            "from vkdoctor.closures import targets\nx = targets.target_resolutions",
            "made_up.py:2 uses targets.target_resolutions: ask facts.target_resolutions",
        ),
        (
            "import vkdoctor.elf.platform\nx = vkdoctor.elf.platform.ldso_platform",
            "made_up.py:2 uses vkdoctor.elf.platform.ldso_platform: ask facts.ldso_platform",
        ),
        (
            "from vkdoctor.facts.overlay import Outcome",
            "made_up.py:1 imports vkdoctor.facts.overlay.Outcome",
        ),
        ("from vkdoctor.facts import selection", "made_up.py:1 imports vkdoctor.facts.selection"),
        ("import vkdoctor.facts.probe", "made_up.py:1 imports vkdoctor.facts.probe"),
        ("def f(ctx, g):\n    return ctx.fact(g)", "made_up.py:2 ctx.fact(...)"),
        ("def f(ctx, g):\n    return ctx.known(g)", "made_up.py:2 ctx.known(...)"),
    ],
)
def test_a_fact_asked_past_its_name_is_caught(tmp_path: Path, source: str, expected: str) -> None:
    path = tmp_path / "made_up.py"
    path.write_text(source + "\n")
    assert expected in fact_violations("vkdoctor.checks.made_up", path)


def test_a_check_that_asks_by_name_passes(tmp_path: Path) -> None:
    """The namespace, a type under TYPE_CHECKING, and a helper that is no fact are allowed."""
    path = tmp_path / "made_up.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "from vkdoctor import facts\n"
        "from vkdoctor.children.loadtest import classify\n"
        "from vkdoctor.loader.icd import DriverScan\n"
        "if TYPE_CHECKING:\n"
        "    from vkdoctor.facts.overlay import Outcome\n"
        "def f(ctx):\n"
        "    return facts.load_test(ctx), facts.driver_scan(ctx), classify\n"
    )
    assert fact_violations("vkdoctor.checks.made_up", path) == []


def test_the_facts_namespace_imports_nothing_until_asked() -> None:
    """Importing vkdoctor.facts (what every check module does) imports no other vkdoctor module:
    each name imports the module that computes it when first asked."""
    import subprocess
    import sys

    code = "import sys, vkdoctor.facts; print(sorted(m for m in sys.modules if m.startswith('vkdoctor')))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['vkdoctor', 'vkdoctor.facts']"


class _Recording(dict):
    """A Context's memo that holds every fact already: what is asked, and by which key."""

    SENTINEL = object()

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[object] = []

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: object) -> object:
        self.asked.append(key)
        return self.SENTINEL

    def get(self, key: object, default: object = None) -> object:
        return self[key]


def _one_context_facts() -> list[str]:
    """The names that are facts of a Context alone (the others are helpers over facts, such as
    `all_selected(ctx, *codes)`)."""
    import inspect

    import vkdoctor.facts

    return [
        n
        for n in sorted(NAMED)
        if len(inspect.signature(getattr(vkdoctor.facts, n)).parameters) == 1
    ]


def test_the_namespace_names_the_facts_of_the_brief() -> None:
    """The rule above can fail only if the namespace names what the checks ask for."""
    assert {"load_test", "driver_scan", "target_resolutions", "package_inventory"} <= set(
        _one_context_facts()
    )
    assert {"all_selected", "predicted", "runs_under"} <= set(NAMED) - set(_one_context_facts())


@pytest.mark.parametrize("name", _one_context_facts())
def test_each_named_fact_is_the_memo_of_the_function_it_names(name: str) -> None:
    """A name computes nothing itself: it gives what the run's memo holds for the computing
    function (the key the face and the services use), so a fact is computed once per run."""
    import vkdoctor.facts
    from vkdoctor.model.context import Context

    fn = getattr(vkdoctor.facts, name)
    compute, memo = NAMED[name]
    memo_of_fn = _Recording()
    assert fn(Context(_facts=memo_of_fn)) is _Recording.SENTINEL
    if memo:
        assert memo_of_fn.asked == [compute]
    else:  # the computing function memoizes itself: the same key
        memo_of_compute = _Recording()
        assert compute(Context(_facts=memo_of_compute)) is _Recording.SENTINEL
        assert memo_of_fn.asked == memo_of_compute.asked != []


# Only the face reads the host's environment and command line: everything below it is handed
# what it needs (the Context's env, parsed options, os.environ passed in where a child must
# change it). What counts: os.environ, os.environb, os.getenv, os.getenvb, os.putenv,
# os.unsetenv, sys.argv and sys.orig_argv, however os or sys was imported or named.

_HOST_INPUTS = {
    "os": {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"},
    "sys": {"argv", "orig_argv"},
}


def host_input_reads(path: Path) -> list[str]:
    """Where the module at `path` reads the process's environment or command line itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    aliases: dict[str, str] = {}  # local name -> "os" or "sys"
    wrong: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _HOST_INPUTS:
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in _HOST_INPUTS and not node.level:
            for alias in node.names:
                if alias.name in _HOST_INPUTS[node.module]:
                    wrong.append(
                        f"{path.name}:{node.lineno} from {node.module} import {alias.name}"
                    )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr in _HOST_INPUTS[aliases[node.value.id]]
        ):
            wrong.append(f"{path.name}:{node.lineno} {aliases[node.value.id]}.{node.attr}")
    return sorted(wrong)


def test_only_the_face_reads_the_environment_and_the_command_line() -> None:
    wrong = [
        f"{m}: {w}"
        for m, p in MODULES.items()
        if layer_of(m) != "Face"
        for w in host_input_reads(p)
    ]
    assert wrong == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\nx = os.environ.get('PATH')", "made_up.py:2 os.environ"),
        ("import os as _os\nx = _os.getenv('HOME')", "made_up.py:2 os.getenv"),
        ("import sys\nx = sys.argv[1:]", "made_up.py:2 sys.argv"),
        ("def f():\n    import sys\n    return sys.orig_argv", "made_up.py:3 sys.orig_argv"),
        ("from os import environ", "made_up.py:1 from os import environ"),
        ("from sys import argv as a", "made_up.py:1 from sys import argv"),
        ("import os\nos.environ.clear()", "made_up.py:2 os.environ"),
    ],
)
def test_a_read_of_the_environment_below_the_face_is_caught(
    tmp_path: Path, source: str, expected: str
) -> None:
    path = tmp_path / "made_up.py"
    path.write_text(source + "\n")
    assert expected in host_input_reads(path)


def test_what_is_handed_the_environment_is_not_caught(tmp_path: Path) -> None:
    path = tmp_path / "made_up.py"
    path.write_text("import os, sys\ndef f(env, args):\n    return env.get('PATH'), args, os.sep\n")
    assert host_input_reads(path) == []
