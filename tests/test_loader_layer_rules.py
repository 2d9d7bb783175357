"""Layer selection rules of loader 1.3.239, held against the real loader, one on-disk case a row.

The rows port the cases of the Khronos loader's own tests (Vulkan-Loader v1.3.239,
tests/loader_layer_tests.cpp: MetaLayers.*, OverrideMetaLayer.*, TestLayers.Override*) on meta
layers and the override layer; v1.3.239 has no test of duplicate names or of a layer's
api_version variant, so those rows follow loader/loader.c at that tag (named in each row). Each row writes real manifests
into a temporary tree, with real layer libraries (tests/data/drop_layer.c built with gcc as a
pass-through layer, one copy per layer) and a real driver (lavapipe), runs the system's
libvulkan.so.1 through tests/data/vkprobe.c with VK_LOADER_DEBUG, and compares the layers the
loader inserts into the instance with those vkdoctor says it inserts.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.loader_oracle import DATA, LVP_MANIFEST, RealLoader, context
from vkdoctor.loader.layerrecords import may_load
from vkdoctor.loader.layers import explicit_layer_scan, implicit_layer_scan

#: where a manifest goes: the implicit directory searched first, the one searched later, the
#: explicit directory
FIRST = "cfg/vulkan/implicit_layer.d"
LATER = "data/vulkan/implicit_layer.d"
EXPLICIT = "data/vulkan/explicit_layer.d"
MISSING = "/nonexistent/libVkLayer_missing.so"


@dataclass(frozen=True)
class Row:
    #: the Khronos test the row ports
    ported: str
    #: (directory, file name, the manifest's layer object); "library_path": "LIB" means a real
    #: pass-through layer library of its own
    manifests: tuple[tuple[str, str, dict[str, Any]], ...]
    env: dict[str, str] = field(default_factory=dict)


def layer(name: str, library: str = "LIB", implicit: bool = True, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "type": "GLOBAL",
        "api_version": "1.3.211",
        "implementation_version": "1",
        "description": "test layer",
        **({"library_path": library} if library else {}),
        **extra,
    }
    if implicit and "disable_environment" not in extra:
        out["disable_environment"] = {f"DISABLE_{name.upper()}": "1"}
    return out


def meta(name: str, *components: str, implicit: bool = True, **extra: Any) -> dict[str, Any]:
    return layer(name, "", implicit, component_layers=list(components), **extra)


def override(components: list[str] | None, **extra: Any) -> dict[str, Any]:
    """The override layer as vkconfig writes it (file format 1.2.0, api_version 1.1.0)."""
    entry = layer(
        "VK_LAYER_LUNARG_override",
        "",
        api_version="1.1.0",
        disable_environment={"DisableMeIfYouCan": "1"},
        **extra,
    )
    if components is not None:
        entry["component_layers"] = components
    entry.setdefault("_ffv", "1.2.0")
    return entry


ROWS: dict[str, Row] = {
    "duplicate-later-wins": Row(
        "loader.c loader_create_instance_chain: the later copy of a name wins",
        (
            (FIRST, "dup.json", layer("VK_LAYER_T_dup")),
            (LATER, "dup.json", layer("VK_LAYER_T_dup")),
        ),
    ),
    "duplicate-later-missing-falls-back": Row(
        "loader.c loader_create_instance_chain: a copy that does not open is skipped",
        (
            (FIRST, "dup.json", layer("VK_LAYER_T_dup")),
            (LATER, "dup.json", layer("VK_LAYER_T_dup", MISSING)),
        ),
    ),
    "duplicate-both-missing": Row(
        "loader.c loader_create_instance_chain: no copy opens",
        (
            (FIRST, "dup.json", layer("VK_LAYER_T_dup", MISSING + "1")),
            (LATER, "dup.json", layer("VK_LAYER_T_dup", MISSING)),
        ),
    ),
    "duplicate-later-without-entry-point": Row(
        "loader.c loader_create_instance_chain: a copy without vkGetInstanceProcAddr is skipped",
        (
            (FIRST, "dup.json", layer("VK_LAYER_T_dup")),
            (LATER, "dup.json", layer("VK_LAYER_T_dup", "NO_ENTRY_POINT")),
        ),
    ),
    "no-entry-point": Row(
        "loader.c loader_create_instance_chain: a library without an entry point is not inserted",
        ((FIRST, "x.json", layer("VK_LAYER_T_x", "NO_ENTRY_POINT")),),
    ),
    "duplicate-later-not-elf": Row(
        "loader.c loader_create_instance_chain: a copy dlopen refuses is skipped",
        (
            (FIRST, "dup.json", layer("VK_LAYER_T_dup")),
            (LATER, "dup.json", layer("VK_LAYER_T_dup", "NOT_ELF")),
        ),
    ),
    "duplicate-explicit-later-missing": Row(
        "loader.c loader_create_instance_chain: explicit copies alike",
        (
            ("cfg/vulkan/explicit_layer.d", "dup.json", layer("VK_LAYER_T_edup", implicit=False)),
            (EXPLICIT, "dup.json", layer("VK_LAYER_T_edup", MISSING, implicit=False)),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_edup"},
    ),
    "variant-implicit": Row(
        "loader.c loader_read_layer_json: non-zero variant skipped",
        ((FIRST, "v.json", layer("VK_LAYER_T_variant", api_version="1.1.0.0")),),
    ),
    "variant-explicit": Row(
        "loader.c loader_read_layer_json: non-zero variant skipped (explicit)",
        ((EXPLICIT, "v.json", layer("VK_LAYER_T_variant", implicit=False, api_version="1.1.0.0")),),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_variant"},
    ),
    "variant-zero-four-parts": Row(
        "loader.c loader_parse_version_string: a four-part version with variant 0",
        ((FIRST, "v.json", layer("VK_LAYER_T_variant0", api_version="0.1.3.0")),),
    ),
    "meta-missing-components": Row(
        "MetaLayers.InvalidComponentLayer",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_inv1", "VK_LAYER_T_inv2")),
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
        ),
    ),
    "meta-one-component-missing": Row(
        "MetaLayers.InvalidComponentLayer (one of two components missing)",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_regular", "VK_LAYER_T_inv")),
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
        ),
    ),
    "meta-implicit-loads-explicit-components": Row(
        "MetaLayers.InvalidComponentLayer, with every component present",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_a", "VK_LAYER_T_b")),
            (EXPLICIT, "a.json", layer("VK_LAYER_T_a", implicit=False)),
            (EXPLICIT, "b.json", layer("VK_LAYER_T_b", implicit=False)),
        ),
    ),
    "meta-explicit-enabled-by-variable": Row(
        "MetaLayers.ExplicitMetaLayer",
        (
            (EXPLICIT, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_regular", implicit=False)),
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_meta"},
    ),
    "meta-explicit-not-asked-for": Row(
        "MetaLayers.ExplicitMetaLayer (layer not enabled)",
        (
            (EXPLICIT, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_regular", implicit=False)),
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
        ),
    ),
    "meta-lists-itself": Row(
        "MetaLayers.MetaLayerNameInComponentLayers",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_meta", "VK_LAYER_T_regular")),
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
        ),
    ),
    "meta-of-meta": Row(
        "MetaLayers.MetaLayerWhichAddsMetaLayer",
        (
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
            (EXPLICIT, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_regular", implicit=False)),
            (
                EXPLICIT,
                "metameta.json",
                meta(
                    "VK_LAYER_T_metameta", "VK_LAYER_T_meta", "VK_LAYER_T_regular", implicit=False
                ),
            ),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_metameta"},
    ),
    "meta-of-invalid-meta": Row(
        "MetaLayers.MetaLayerWhichAddsMetaLayer, the inner meta layer missing a component",
        (
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
            (EXPLICIT, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_gone", implicit=False)),
            (
                FIRST,
                "metameta.json",
                meta("VK_LAYER_T_metameta", "VK_LAYER_T_regular", "VK_LAYER_T_meta"),
            ),
        ),
    ),
    "meta-component-older-api": Row(
        "OverrideMetaLayer.OlderComponentLayerInMetaLayer (a plain meta layer)",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_old", api_version="1.3.0")),
            (EXPLICIT, "old.json", layer("VK_LAYER_T_old", implicit=False, api_version="1.1.0")),
        ),
    ),
    "meta-turned-off-by-its-disable": Row(
        "ImplicitLayers.OnlyDisableEnvVar, for a meta layer",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_regular")),
            (EXPLICIT, "regular.json", layer("VK_LAYER_T_regular", implicit=False)),
        ),
        {"DISABLE_VK_LAYER_T_META": "1"},
    ),
    "meta-implicit-component-off-on-its-own": Row(
        "loader_add_meta_layer: an implicit component needs its own enable",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_imp", "VK_LAYER_T_exp")),
            (LATER, "imp.json", layer("VK_LAYER_T_imp")),
            (EXPLICIT, "exp.json", layer("VK_LAYER_T_exp", implicit=False)),
        ),
        {"DISABLE_VK_LAYER_T_IMP": ""},
    ),
    "meta-component-disabled-by-filter": Row(
        "TestLayers.EnvironLayerDisableExplicitLayer, for a meta layer's component",
        (
            (FIRST, "meta.json", meta("VK_LAYER_T_meta", "VK_LAYER_T_a", "VK_LAYER_T_b")),
            (EXPLICIT, "a.json", layer("VK_LAYER_T_a", implicit=False)),
            (EXPLICIT, "b.json", layer("VK_LAYER_T_b", implicit=False)),
        ),
        {"VK_LOADER_LAYERS_DISABLE": "*_b"},
    ),
    "override-blacklist": Row(
        "OverrideMetaLayer.ApplicationEnabledLayerInBlacklist",
        (
            (EXPLICIT, "1.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (EXPLICIT, "2.json", layer("VK_LAYER_T_2", implicit=False, api_version="1.1.0")),
            (
                FIRST,
                "override.json",
                override(["VK_LAYER_T_1"], blacklisted_layers=["VK_LAYER_T_2"]),
            ),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_2"},
    ),
    "override-blacklists-an-implicit-layer": Row(
        "OverrideMetaLayer.ApplicationEnabledLayerInBlacklist, for an implicit layer",
        (
            (LATER, "x.json", layer("VK_LAYER_T_x")),
            (FIRST, "override.json", override([], blacklisted_layers=["VK_LAYER_T_x"])),
        ),
    ),
    "override-blacklist-against-enable-filter": Row(
        "TestLayers.OverrideBlacklistedLayerWithEnableFilter, with an empty component list",
        (
            (EXPLICIT, "1.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (FIRST, "override.json", override([], blacklisted_layers=["VK_LAYER_T_1"])),
        ),
        {"VK_LOADER_LAYERS_ENABLE": "VK_LAYER_T_1"},
    ),
    "override-without-components-is-no-layer": Row(
        "TestLayers.OverrideBlacklistedLayerWithEnableFilter",
        (
            (EXPLICIT, "1.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (FIRST, "override.json", override(None, blacklisted_layers=["VK_LAYER_T_1"])),
        ),
        {"VK_LOADER_LAYERS_ENABLE": "VK_LAYER_T_1"},
    ),
    "override-forces-implicit-layers-on": Row(
        "loader_implicit_layer_is_enabled: the override layer's components are forced on",
        (
            (LATER, "off.json", layer("VK_LAYER_T_off", enable_environment={"T_NEVER": "1"})),
            (LATER, "dis.json", layer("VK_LAYER_T_dis")),
            (FIRST, "override.json", override(["VK_LAYER_T_off", "VK_LAYER_T_dis"])),
        ),
        {"DISABLE_VK_LAYER_T_DIS": "1"},
    ),
    "override-turned-off": Row(
        "OverrideMetaLayer: the override layer off by its disable_environment",
        (
            (LATER, "x.json", layer("VK_LAYER_T_x")),
            (EXPLICIT, "1.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (
                FIRST,
                "override.json",
                override(["VK_LAYER_T_1"], blacklisted_layers=["VK_LAYER_T_x"]),
            ),
        ),
        {"DisableMeIfYouCan": "1"},
    ),
    "override-paths": Row(
        "OverrideMetaLayer.BasicOverridePaths",
        (
            ("ovr", "r.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (FIRST, "override.json", override(["VK_LAYER_T_1"], override_paths=["TOP/ovr"])),
        ),
    ),
    "override-paths-ignore-other-layers": Row(
        "OverrideMetaLayer.BasicOverridePathsIgnoreOtherLayers",
        (
            (EXPLICIT, "r.json", layer("VK_LAYER_T_regular", implicit=False, api_version="1.0.0")),
            ("ovr", "r.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (FIRST, "override.json", override(["VK_LAYER_T_1"], override_paths=["TOP/ovr"])),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_regular", "VK_ADD_LAYER_PATH": "TOP/" + EXPLICIT},
    ),
    "override-paths-beat-vk-layer-path": Row(
        "OverrideMetaLayer.OverridePathsInteractionWithVK_LAYER_PATH",
        (
            ("envpath", "e.json", layer("VK_LAYER_T_env", implicit=False, api_version="1.0.0")),
            ("ovr", "r.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (FIRST, "override.json", override(["VK_LAYER_T_1"], override_paths=["TOP/ovr"])),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_env", "VK_LAYER_PATH": "TOP/envpath"},
    ),
    "override-paths-older-implicit-component": Row(
        "OverrideMetaLayer.OverridePathsEnableImplicitLayerInDefaultPaths",
        (
            (LATER, "i.json", layer("VK_LAYER_T_implicit", api_version="1.0.0")),
            ("ovr", "r.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (
                FIRST,
                "override.json",
                override(["VK_LAYER_T_1", "VK_LAYER_T_implicit"], override_paths=["TOP/ovr"]),
            ),
        ),
    ),
    "override-old-file-format": Row(
        "OverrideMetaLayer.ManifestFileFormatVersionTooOld",
        (
            ("ovr", "r.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (
                FIRST,
                "override.json",
                override(["VK_LAYER_T_1"], override_paths=["TOP/ovr"], _ffv="1.0.0"),
            ),
        ),
    ),
    "override-dropped-its-paths-still-apply": Row(
        "loader_scan_for_layers: override_paths are read before the meta layers are checked",
        (
            (EXPLICIT, "r.json", layer("VK_LAYER_T_regular", implicit=False)),
            ("ovr", "r.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (
                FIRST,
                "override.json",
                override(["VK_LAYER_T_gone", "VK_LAYER_T_1"], override_paths=["TOP/ovr"]),
            ),
        ),
        {"VK_INSTANCE_LAYERS": "VK_LAYER_T_regular:VK_LAYER_T_1"},
    ),
    "override-for-another-program": Row(
        "OverrideMetaLayer.AppKeysDoesNotContainCurrentApplication",
        (
            (EXPLICIT, "1.json", layer("VK_LAYER_T_1", implicit=False, api_version="1.1.0")),
            (
                FIRST,
                "override.json",
                override(
                    ["VK_LAYER_T_1"], app_keys=["/Hello", "Hi", "./../Uh-oh", "C:/Windows/Only"]
                ),
            ),
        ),
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[RealLoader, Path]:
    d = tmp_path_factory.mktemp("layerrules")
    (d / "nothing.c").write_text("int vkdoctor_layer_rules_nothing(void) { return 0; }\n")
    for src, out, args in (
        ("vkprobe.c", d / "vkprobe", ["-O1", "-ldl"]),
        ("drop_layer.c", d / "libpass.so", ["-shared", "-fPIC"]),
        ("nothing.c", d / "libnothing.so", ["-shared", "-fPIC"]),
    ):
        subprocess.run(
            ["gcc", "-o", str(out), str(d / src if src == "nothing.c" else DATA / src), *args],
            check=True,
            timeout=120,
            capture_output=True,
        )
    return RealLoader(d / "vkprobe"), d / "libpass.so"


def write_row(row: Row, top: Path, passthrough: Path) -> dict[str, str]:
    """The row's files under `top`; returns the environment that finds only them (and lavapipe)."""
    for where, name, given in row.manifests:
        entry = dict(given)
        if entry.get("library_path") in ("LIB", "NO_ENTRY_POINT"):
            lib = top / "libs" / where.replace("/", "_") / f"lib{entry['name']}.so"
            lib.parent.mkdir(parents=True, exist_ok=True)
            if entry["library_path"] == "LIB":
                shutil.copyfile(passthrough, lib)
            else:
                # a shared object that opens but exports no layer entry point
                shutil.copyfile(passthrough.with_name("libnothing.so"), lib)
            entry["library_path"] = str(lib)
        if entry.get("library_path") == "NOT_ELF":
            text_file = top / "libs" / "libVkLayer_text.so"
            text_file.parent.mkdir(parents=True, exist_ok=True)
            text_file.write_text("not a shared object\n")
            entry["library_path"] = str(text_file)
        path = top / where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        version = entry.pop("_ffv", "1.1.2" if "component_layers" in entry else "1.0.0")
        text = json.dumps({"file_format_version": version, "layer": entry})
        path.write_text(text.replace('"TOP/', f'"{top}/'))
    icd = top / "share/vulkan/icd.d/lvp.json"
    icd.parent.mkdir(parents=True, exist_ok=True)
    icd.write_bytes(LVP_MANIFEST.read_bytes())
    return {
        "HOME": str(top / "home"),
        "XDG_CONFIG_HOME": str(top / "cfg"),
        "XDG_CONFIG_DIRS": str(top / "etcxdg"),
        "XDG_DATA_HOME": str(top / "data"),
        "XDG_DATA_DIRS": str(top / "share"),
        **{k: v.replace("TOP/", f"{top}/") for k, v in row.env.items()},
    }


def vkdoctor_inserts(env: dict[str, str], cwd: Path) -> dict[str, str]:
    """The layers vkdoctor says the loader inserts into every instance: name -> library."""
    ctx = context(env, cwd)
    active = (*implicit_layer_scan(ctx).active, *explicit_layer_scan(ctx).active)
    return {
        x.name: x.library
        for x in active
        if x.name and x.library and may_load(x) and x.library_state == "ok"
    }


#: verify_meta_layer_component_layers' message for a meta layer that stays in the list
VALID_META = re.compile(r'Meta-layer "([^"]+)" all \d+ component layers appear to be valid')


def vkdoctor_verified_metas(env: dict[str, str], cwd: Path) -> set[str]:
    """The meta layers vkdoctor says pass the loader's component check."""
    ctx = context(env, cwd)
    every = (*implicit_layer_scan(ctx).layers, *explicit_layer_scan(ctx).layers)
    return {x.name for x in every if x.name and x.is_meta}


@pytest.mark.parametrize("case", list(ROWS))
def test_layer_rule_matches_the_real_loader(built, tmp_path, case):
    oracle, passthrough = built
    row = ROWS[case]
    env = write_row(row, tmp_path, passthrough)
    real = oracle.run(env, cwd=tmp_path)
    assert real.create_result == 0, real.stdout + real.stderr
    assert vkdoctor_inserts(env, tmp_path) == real.log.layers.inserted, (row.ported, real.stderr)
    assert vkdoctor_verified_metas(env, tmp_path) == set(VALID_META.findall(real.stderr)), (
        row.ported,
        real.stderr,
    )


def test_vki001_says_which_copy_the_loader_falls_back_to(built, tmp_path):
    _, passthrough = built
    env = write_row(ROWS["duplicate-later-missing-falls-back"], tmp_path, passthrough)
    from vkdoctor.checks.layers import ImplicitLayers

    (summary,) = ImplicitLayers().run(context(env, tmp_path))
    later = next(line for line in summary.message.splitlines() if MISSING in line)
    assert (
        f"not used: its library does not load, the loader uses {tmp_path / FIRST}/dup.json" in later
    )
    assert summary.title == "1 of 2 implicit layers active: VK_LAYER_T_dup"


def test_meta_layers_in_the_report(built, tmp_path):
    """VKI001 lists an added meta layer with the components it loads, and each component with
    the meta layer it comes through and how to turn it off; VKI003 flags a dropped meta layer;
    the components are load targets (their libraries get checked)."""
    _, passthrough = built
    from vkdoctor.checks.layers import ImplicitLayerManifest, ImplicitLayers
    from vkdoctor.loader import load_targets

    env = write_row(ROWS["meta-implicit-loads-explicit-components"], tmp_path / "ok", passthrough)
    ctx = context(env, tmp_path)
    (summary,) = ImplicitLayers().run(ctx)
    assert summary.title == ("1 of 1 implicit layer active: VK_LAYER_T_meta (meta layer)")
    meta_manifest = tmp_path / "ok" / FIRST / "meta.json"
    for name in ("VK_LAYER_T_a", "VK_LAYER_T_b"):
        line = next(x for x in summary.message.splitlines() if x.startswith(name))
        assert f"on through meta layer VK_LAYER_T_meta ({meta_manifest})" in line
        assert "turn off: export DISABLE_VK_LAYER_T_META=1" in line
    assert {t.name for t in load_targets(ctx) if t.kind == "layer"} == {
        "VK_LAYER_T_a",
        "VK_LAYER_T_b",
    }

    env = write_row(ROWS["meta-one-component-missing"], tmp_path / "bad", passthrough)
    (dropped,) = ImplicitLayerManifest().run(context(env, tmp_path))
    assert dropped.title.startswith("Implicit layer VK_LAYER_T_meta in ")
    assert (
        "meta layer dropped by the loader, with all its components: its component layer "
        "VK_LAYER_T_inv is not found" in dropped.message
    )


def test_vki005_names_what_the_override_layer_does_and_its_fix_works(built, tmp_path):
    """VKI005 names the override manifest, each blacklisted layer that is not loaded and each
    forced one; the export it prints, run against the real loader, brings the blacklisted layer
    back (and VKI005 then says the override is not in force)."""
    oracle, passthrough = built
    from vkdoctor.checks.layers import ImplicitLayerManifest, OverrideLayer

    env = write_row(ROWS["override-blacklist"], tmp_path, passthrough)
    ctx = context(env, tmp_path)
    (found,) = OverrideLayer().run(ctx)
    override_manifest = f"{tmp_path / FIRST}/override.json"
    assert found.severity == "warn"
    assert found.title == (
        f"vkconfig's override layer {override_manifest} changes the layers of every Vulkan "
        "application"
    )
    lines = found.message.splitlines()
    assert f"  forces on VK_LAYER_T_1: in every application ({tmp_path / EXPLICIT}/1.json)" in lines
    assert f"  blacklists VK_LAYER_T_2: not loaded ({tmp_path / EXPLICIT}/2.json)" in lines
    assert found.remedy is not None
    (command,) = found.remedy.commands
    assert command == "export DisableMeIfYouCan=1"
    assert list(ImplicitLayerManifest().run(ctx)) == []  # the override's doing is VKI005's

    variable, value = command.removeprefix("export ").split("=")
    fixed = {**env, variable: value}
    real = oracle.run(fixed, cwd=tmp_path)
    assert "VK_LAYER_T_2" in real.log.layers.inserted, real.stderr
    assert vkdoctor_inserts(fixed, tmp_path) == real.log.layers.inserted
    (after,) = OverrideLayer().run(context(fixed, tmp_path))
    assert after.severity == "info" and "is not in force" in after.title


def test_a_meta_layer_says_which_components_it_loads(built, tmp_path):
    _, passthrough = built
    env = write_row(ROWS["meta-implicit-component-off-on-its-own"], tmp_path, passthrough)
    (meta_layer,) = implicit_layer_scan(context(env, tmp_path)).active_meta
    assert meta_layer.activation.endswith(
        "; loads VK_LAYER_T_exp (VK_LAYER_T_imp: off by themselves or by VK_LOADER_LAYERS_DISABLE)"
    )


def test_vki002_names_a_layer_library_without_an_entry_point(built, tmp_path):
    _, passthrough = built
    from vkdoctor.checks.layers import BrokenImplicitLayer

    env = write_row(ROWS["no-entry-point"], tmp_path, passthrough)
    (found,) = BrokenImplicitLayer().run(context(env, tmp_path))
    assert found.title == (
        f"Active implicit layer VK_LAYER_T_x: library {tmp_path}/libs/"
        f"{FIRST.replace('/', '_')}/libVK_LAYER_T_x.so exports neither "
        "vkNegotiateLoaderLayerInterfaceVersion nor vkGetInstanceProcAddr"
    )


def test_duplicate_rule_by_loader_version():
    """1.3.239 (checked against the real loader above): the last copy that loads; 1.3.247 and
    later keep the first implicit copy only (loader_add_implicit_layer skips a listed name)."""
    from vkdoctor.loader.layerrecords import Layer, pick_duplicates

    def copy(manifest: str, state: str) -> Layer:
        return Layer(
            manifest=manifest,
            origin="test",
            name="VK_LAYER_T_dup",
            library_path="/x.so",
            library="/x.so",
            library_state=state,
            active=True,
        )

    first, later = copy("first.json", "ok"), copy("later.json", "missing")
    assert pick_duplicates([first, later]) == (first,)
    assert pick_duplicates([first, later], first_wins=True) == (first,)
    first, later = copy("first.json", "missing"), copy("later.json", "ok")
    assert pick_duplicates([first, later]) == (later,)
    assert pick_duplicates([first, later], first_wins=True) == (first,)
