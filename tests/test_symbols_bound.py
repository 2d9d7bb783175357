"""VKL006 from the load test's real dlopen: RTLD_NOW in a child where everything was bound at load.

A target whose closure the child bound with RTLD_NOW has no undefined symbols, and its symbol
tables are not read (vkdoctor.facts.symbols); any other target is answered by the tables, as
before. The oracles: the static pass itself (the same answer on this machine) and ld.so (what
the child's RTLD_NOW dlopen says of real files built here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_json
from elfbuild import build_lib

from vkdoctor.closures.targets import target_resolutions
from vkdoctor.closures.targets import undefined_by_target as from_tables
from vkdoctor.context import Context
from vkdoctor.elf.resolve import resolve_target
from vkdoctor.facts import symbols
from vkdoctor.facts.loadtest import load_test, started_load_test
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.loadtest import TargetOutcome, apply_event, run_load_test

SYSLIB = Path("/usr/lib/x86_64-linux-gnu")


def _driver(path: Path, manifest: Path | None = None) -> LoadTarget:
    return LoadTarget(
        kind="driver",
        name=path.name,
        manifest=str(manifest or path.with_suffix(".json")),
        dlopen_name=str(path),
    )


def _shadowed_driver(tmp_path: Path) -> tuple[Path, Path]:
    """A lazily bound driver linked against a libdrmx with drmx_new, and a folder with another
    build of libdrmx that lacks it (the AMDGPU-PRO libdrm case): (driver, that folder)."""
    full = build_lib(
        tmp_path / "sys" / "libdrmx.so.2",
        soname="libdrmx.so.2",
        source="int drmx_old(void){return 1;}\nint drmx_new(void){return 2;}\n",
    )
    build_lib(
        tmp_path / "vendor" / "libdrmx.so.2",
        soname="libdrmx.so.2",
        source="int drmx_old(void){return 1;}\n",
    )
    lazy = build_lib(
        tmp_path / "drv" / "libvulkan_lazy.so",
        source="int drmx_new(void);\nint vk_icdGetInstanceProcAddr(void){return drmx_new();}\n",
        link=[full],
        runpath=[str(full.parent)],
        flags=["-Wl,-z,lazy"],
    )
    return lazy, tmp_path / "vendor"


def test_the_child_binds_the_system_drivers_now_and_the_answer_is_the_tables() -> None:
    """On this machine every Mesa driver's closure binds with RTLD_NOW, none is read, and the
    answer is exactly what the symbol tables give."""
    ctx = Context(env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    ctx.fact(started_load_test)
    outcomes = ctx.fact(load_test).outcomes
    drivers = [o for o in outcomes if o.target.kind == "driver"]
    assert drivers and all(o.dlopen == "ok" and o.bound is True for o in drivers), outcomes
    bound = symbols.bound_at_dlopen(ctx)
    assert {o.target for o in drivers} <= bound
    assert all(t in bound for t, res in ctx.fact(target_resolutions) if res.ok)
    read = {(t, tuple(u)) for t, _, u in from_tables(ctx)}
    answered = {(t, tuple(u)) for t, _, u in symbols.undefined_by_target(ctx)}
    assert answered == read
    assert all(not u for _, u in read)


def test_without_the_load_test_the_tables_answer() -> None:
    ctx = Context()
    assert symbols.bound_at_dlopen(ctx) == frozenset()
    assert ctx.known(started_load_test) is None  # asking did not start one


def test_a_lazily_bound_missing_function_is_found_by_the_child_and_named_by_the_tables(
    tmp_path: Path,
) -> None:
    """RTLD_NOW refuses the driver (ld.so names the symbol), the loader's lazy dlopen succeeds,
    and VKL006 warns with the symbol the tables name: the process would die when it calls it."""
    lazy, vendor = _shadowed_driver(tmp_path)
    env = {"LD_LIBRARY_PATH": str(vendor), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    (outcome,) = run_load_test([_driver(lazy)], env=env, cwd=tmp_path).outcomes
    assert (outcome.dlopen, outcome.bound) == ("ok", False)

    manifest = tmp_path / "lazy_icd.json"
    manifest.write_text(
        json.dumps(
            {
                "file_format_version": "1.0.0",
                "ICD": {"library_path": str(lazy), "api_version": "1.3.0"},
            }
        )
    )
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKL006", "--select", "VKT"],
        env={"VK_DRIVER_FILES": str(manifest), "LD_LIBRARY_PATH": str(vendor)},
    )
    (f,) = [x for x in doc["findings"] if x["code"] == "VKL006" and x["severity"] != "ok"]
    assert f["severity"] == "warn"
    assert f["evidence"]["symbols"] == ["drmx_new"]
    assert "symbol lookup error" in f["message"]


def test_after_a_lazy_dlopen_no_later_target_counts_as_bound(tmp_path: Path) -> None:
    """The lazily loaded objects stay in the child: a later RTLD_NOW dlopen would not bind
    them again, so it proves nothing and is not tried."""
    lazy, vendor = _shadowed_driver(tmp_path)
    env = {"LD_LIBRARY_PATH": str(vendor), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    first, second = run_load_test(
        [_driver(lazy), _driver(SYSLIB / "libvulkan_lvp.so")], env=env, cwd=tmp_path
    ).outcomes
    assert (first.bound, second.bound, second.dlopen) == (False, None, "ok")


def test_an_interpreter_library_with_names_the_model_lacks_widens_the_scope(
    tmp_path: Path,
) -> None:
    """A library of the child's interpreter outside the model's scope: Python's API and the
    executable's own names cannot be what a driver binds to, anything else might."""
    ctx = Context()
    lvp = _driver(SYSLIB / "libvulkan_lvp.so")
    res = resolve_target(ctx, lvp)
    python_only = build_lib(
        tmp_path / "libpyonly.so",
        source="int PyFake_Call(void){return 1;}\nint _PyFake(void){return 2;}\nint _end_marker;\n",
    )
    other = build_lib(tmp_path / "libother.so", source="int other_fn(void){return 1;}\n")

    def interpreter(*paths: Path) -> tuple[tuple[str, str], ...]:
        return tuple((os.path.realpath(p), str(p)) for p in paths)

    assert symbols._may_widen(ctx, res, interpreter(python_only)) is True  # _end_marker
    python_api = build_lib(
        tmp_path / "libpyapi.so", source="int PyFake_Call(void){return 1;}\nint _PyFake;\n"
    )
    assert symbols._may_widen(ctx, res, interpreter(python_api)) is False
    assert symbols._may_widen(ctx, res, interpreter(other)) is True
    # libc is in the model's scope: what it exports widens nothing
    assert (
        symbols._may_widen(ctx, res, interpreter(Path("/lib/x86_64-linux-gnu/libc.so.6"))) is False
    )
    assert symbols._may_widen(ctx, res, None) is True


def test_the_child_word_on_binding_is_read_as_it_is_given() -> None:
    target = _driver(SYSLIB / "libvulkan_lvp.so")
    base = TargetOutcome(target=target)
    end = {"event": "end", "step": "dlopen", "ok": True, "error": None}
    assert apply_event(base, {**end, "bound": True}).bound is True
    assert apply_event(base, {**end, "bound": False}).bound is False
    assert apply_event(base, {**end, "bound": None}).bound is None
    assert apply_event(base, {**end, "bound": "yes"}).bound is None
    assert apply_event(base, end).bound is None
