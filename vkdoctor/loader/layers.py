"""Implicit layers: found, read and switched on or off as loader 1.3.239 does.

Found on the driver search list with the implicit_layer.d suffix (no variable changes that list in
1.3.239); read by loader_add_layer_properties / loader_read_layer_json; activated by
loader_implicit_layer_is_enabled: enable_environment must equal its value exactly,
VK_LOADER_LAYERS_ENABLE / _DISABLE (name globs, ~all~, ~implicit~) force on or off, and a
disable_environment variable that is defined at all (even empty) turns the layer off.
The rules that changed in later loaders (key lookup, field types and printing, the search
variables) follow the loader that runs (`LoaderVersion`).
"""

from __future__ import annotations

from typing import Any

from vkdoctor.elf.dynsym import symbol_table
from vkdoctor.loader import cjson, fileio
from vkdoctor.loader.fields import (
    inspect_library,
    parse_version,
    process_bits,
    resolve_library,
    variant_of,
    version_triple,
)
from vkdoctor.loader.filters import Filter, matches, parse_filter, parse_layer_disable
from vkdoctor.loader.icd import MAX_DEPTH
from vkdoctor.loader.layerrecords import (
    OVERRIDE_LAYER,
    Layer,
    LayerFile,
    LayerScan,
)
from vkdoctor.loader.rootpath import host_path
from vkdoctor.loader.search import (
    ManifestFile,
    SearchPlan,
    explicit_layer_plan,
    implicit_layer_plan,
    override_layer_plan,
    scan,
    secure_getenv,
)
from vkdoctor.loader.stdlib import find_bare
from vkdoctor.loader.version import LoaderVersion, loader_version
from vkdoctor.model.context import Context

# Manifest-level outcomes (one per file)
FILE_OK = "ok"
FILE_OPEN_FAILED = "open-failed"
FILE_SILENT = "skipped-silently"
FILE_FIFO = "fifo-hangs"
FILE_SPECIAL = "special-file"
FILE_TOO_LARGE = "too-large"
FILE_TOO_DEEP = "too-deep"
FILE_JSON_ERROR = "json-error"
FILE_CRASH = "loader-crash"
FILE_NOT_OBJECT = "not-an-object"
FILE_NO_FILE_FORMAT = "no-file-format-version"
FILE_NO_LAYER = "no-layer-object"
FILE_MULTIPLE_LAYER = "multiple-layer-objects"


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _item_text(node: cjson.Node | None, loader: LoaderVersion) -> str | None:
    """GET_JSON_ITEM: cJSON_Print minus first and last character (loaders before 1.3.251),
    the printed text whole on newer ones.

    A one-character value (a digit) leaves the old loader reading past the text; observed: empty.
    """
    if node is None:
        return None
    if not loader.strips_printed_fields:
        return _text(cjson.field_text(node, stripped=False))
    printed = cjson.print_value(node)
    return _text(printed[1:-1]) if len(printed) >= 2 else ""


def _env_pair(node: cjson.Node, non_string: str | None = None) -> tuple[str, str] | None:
    """The first key/value of an enable/disable_environment object, as the loader copies it.

    A value that is not a string: `non_string` is the loader's message when it skips the
    layer (LayerSkipped), None when it copies the value from NULL (LoaderCrash).
    """
    if not node.children or node.children[0].key is None:
        return None
    first = node.children[0]
    if first.type != cjson.STRING and non_string is not None:
        raise LayerSkipped(non_string)
    if first.type != cjson.STRING:
        raise cjson.LoaderCrash(
            f"the value of {_text(first.key or b'')!r} is not a string; the loader copies from NULL"
        )
    return _text(first.key or b""), _text(first.string)


class LayerSkipped(Exception):
    """The loader skips this layer with a warning (the message)."""


def _names(node: cjson.Node, loader: LoaderVersion) -> tuple[str, ...]:
    """A JSON array of names as the loader copies each (`_item_text`)."""
    return tuple(_item_text(c, loader) or "" for c in node.children)


def _not_a_string(key: str, node: cjson.Node | None, loader: LoaderVersion) -> str | None:
    """Why `loader` skips the layer for field `key`, when it wants a string and `node` is not."""
    if node is None or node.type == cjson.STRING or not loader.layer_fields_must_be_strings:
        return None
    return f"'{key}' is not a string, which {loader.named} reads as missing: it skips the layer"


_REQUIRED = ("name", "type", "api_version", "implementation_version", "description")


def _layer(
    ctx: Context,
    mf: ManifestFile,
    node: cjson.Node,
    enable: Filter,
    disable: Filter,
    loader: LoaderVersion,
    explicit: bool = False,
) -> Layer:
    base: dict[str, Any] = {"manifest": mf.path, "origin": mf.origin}
    if node.type == cjson.ARRAY and node.children and not loader.array_lookup_crashes:
        return Layer(
            **base,
            name=None,
            invalid=f"'layer' is an array, not an object: {loader.named} finds no 'name' "
            "in it and skips it",
        )
    values: dict[str, str] = {}
    for key in _REQUIRED:
        item = cjson.get(node, key, loader.json_lookup)
        why = _not_a_string(key, item, loader)
        if why is not None:
            return Layer(**base, name=values.get("name"), invalid=why)
        got = _item_text(item, loader)
        if got is None:
            return Layer(**base, name=values.get("name"), invalid=f"required field '{key}' missing")
        values[key] = got
    name = values["name"]
    base["name"] = name
    base["api_version"] = values["api_version"]
    base["type"] = values["type"]
    if values["type"] == "DEVICE":
        return Layer(**base, invalid="type DEVICE: device layers are no longer supported")
    if values["type"] not in ("INSTANCE", "GLOBAL"):
        return Layer(**base, invalid=f"type {values['type']!r} is not INSTANCE or GLOBAL")
    lib = cjson.get(node, "library_path", loader.json_lookup)
    comps = cjson.get(node, "component_layers", loader.json_lookup)
    if lib is not None and comps is not None:
        return Layer(**base, invalid="has both library_path and component_layers")
    why = _not_a_string("library_path", lib, loader)
    if why is not None:
        return Layer(**base, invalid=why)
    if lib is not None:
        raw = _item_text(lib, loader) or ""
        library, rule = resolve_library(mf.path, raw)
        base.update(library_path=raw, library=library, library_rule=rule)
        if rule == "bare":
            found = find_bare(ctx, library)
            base["library_found"] = found
            base["library_state"] = _library_state(ctx, found, node, loader) if found else "unknown"
        else:
            base["library_state"] = _library_state(ctx, library, node, loader)
    elif comps is not None:
        base["component_layers"] = _names(comps, loader)
    else:
        return Layer(**base, invalid="has neither library_path nor component_layers")
    if name == OVERRIDE_LAYER:
        for key in ("blacklisted_layers", "override_paths", "app_keys"):
            names = cjson.get(node, key, loader.json_lookup)
            base[key] = _names(names, loader) if names is not None else ()
    dis = cjson.get(node, "disable_environment", loader.json_lookup)
    try:
        pair = _env_pair(dis, _non_string_disable(loader, explicit)) if dis is not None else None
    except LayerSkipped as exc:
        if not explicit:
            return Layer(**base, invalid=str(exc))
        pair = None
    if pair is None and not explicit:
        return Layer(**base, invalid="required 'disable_environment' missing or empty")
    if pair is not None:
        base["disable_env"], base["disable_value"] = pair
    variant = variant_of(parse_version(values["api_version"].encode("utf-8", "surrogateescape")))
    if variant:
        return Layer(
            **base,
            invalid=f"api_version {values['api_version']} has a non-zero variant ({variant}); "
            "the loader skips the layer",
        )
    ena = cjson.get(node, "enable_environment", loader.json_lookup)
    pair = _env_pair(ena) if ena is not None else None
    if pair is not None:
        base["enable_env"], base["enable_value"] = pair
    arch = cjson.get(node, "library_arch", loader.json_lookup)
    if arch is not None:
        arch_text = _item_text(arch, loader) or ""
        base["library_arch"] = arch_text
        bits = process_bits(ctx.machine)
        if (arch_text.startswith("32") and bits != 32) or (
            arch_text.startswith("64") and bits != 64
        ):
            return Layer(
                **base, invalid=f"library_arch {arch_text}: skipped by a {bits}-bit process"
            )
    if explicit:
        base["explicit"] = True
        active, why = _explicit_activation(ctx, name, enable, disable)
    else:
        active, why = _activation(ctx, base, enable, disable)
    return Layer(**base, active=active, activation=why)


def _non_string_disable(loader: LoaderVersion, explicit: bool) -> str | None:
    """What `loader` does with a disable_environment value that is not a string: the reason it
    skips the layer, or None when it crashes on it. An explicit layer's is never read."""
    if not explicit and not loader.non_string_disable_skips:
        return None
    return f"the disable_environment value is not a string: {loader.named} skips the layer"


#: the names loader_create_instance_chain looks up in a layer library unless "functions" renames them
_ENTRY_POINTS = ("vkNegotiateLoaderLayerInterfaceVersion", "vkGetInstanceProcAddr")


def _library_state(ctx: Context, path: str, node: cjson.Node, loader: LoaderVersion) -> str:
    """inspect_library's state; "no-entry-point" for a library that opens but exports neither
    entry point, which the loader skips like one that does not open."""
    state = inspect_library(ctx, path).state
    if state != "ok" or cjson.get(node, "functions", loader.json_lookup) is not None:
        return state
    table = symbol_table(ctx, path)
    if table.error is None and not any(table.defines(n) for n in _ENTRY_POINTS):
        return "no-entry-point"
    return state


def instance_layers(ctx: Context) -> list[str]:
    """The layer names VK_INSTANCE_LAYERS asks the loader to add to every instance."""
    return [n for n in (secure_getenv(ctx, "VK_INSTANCE_LAYERS") or "").split(":") if n]


def _explicit_activation(
    ctx: Context, name: str, enable: Filter, disable: Filter
) -> tuple[bool, str]:
    """An explicit layer is in every instance only when a variable asks for it (or the
    application does, which vkdoctor cannot know). As loader 1.3.239 does (checked against it):
    VK_LOADER_LAYERS_ENABLE wins over VK_LOADER_LAYERS_DISABLE, which wins over
    VK_INSTANCE_LAYERS."""
    if enable.active and matches(name, enable):
        if disable.all or disable.explicit or matches(name, disable):
            return True, (
                f"forced on by VK_LOADER_LAYERS_ENABLE={enable.raw} "
                f"(VK_LOADER_LAYERS_DISABLE={disable.raw} cannot turn it off)"
            )
        return True, f"forced on by VK_LOADER_LAYERS_ENABLE={enable.raw}"
    if disable.all or disable.explicit or matches(name, disable):
        return False, f"forced off by VK_LOADER_LAYERS_DISABLE={disable.raw}"
    if name in instance_layers(ctx):
        return True, f"enabled by VK_INSTANCE_LAYERS={secure_getenv(ctx, 'VK_INSTANCE_LAYERS')}"
    return False, "explicit: on only when an application asks for it"


def _activation(
    ctx: Context, layer: dict[str, Any], enable: Filter, disable: Filter
) -> tuple[bool, str]:
    name = layer["name"]
    forced_off = disable.all or disable.implicit or matches(name, disable)
    forced_on = enable.active and matches(name, enable)
    enable_env = layer.get("enable_env")
    if not enable_env:
        on, why = True, "on by default (no enable_environment)"
    else:
        value = ctx.getenv(enable_env)
        want = layer.get("enable_value")
        if value is not None and value == want:
            on, why = True, f"enabled by {enable_env}={value}"
        elif value is None:
            on, why = False, f"off: needs {enable_env}={want}, which is not set"
        else:
            on, why = False, f"off: needs {enable_env}={want} exactly, it is {value!r}"
    if forced_on:
        if not on:
            on, why = True, f"forced on by VK_LOADER_LAYERS_ENABLE={enable.raw}"
    elif on and forced_off:
        return False, f"forced off by VK_LOADER_LAYERS_DISABLE={disable.raw}"
    disable_env = layer["disable_env"]
    if ctx.getenv(disable_env) is not None:
        return False, f"off: {disable_env} is defined ({ctx.getenv(disable_env)!r})"
    return on, why


def _file(
    ctx: Context,
    mf: ManifestFile,
    loader: LoaderVersion,
    enable: Filter,
    disable: Filter,
    explicit: bool = False,
) -> LayerFile:
    base: dict[str, Any] = {"manifest": mf.path, "origin": mf.origin}
    got = fileio.read_manifest(host_path(ctx, mf.path))
    if got.data is None:
        p = got.problem
        if p in (fileio.MISSING, fileio.UNREADABLE, fileio.LOOP):
            return LayerFile(
                **base, outcome=FILE_OPEN_FAILED, reason=f"cannot be opened ({got.detail})"
            )
        if p in (fileio.DIRECTORY, fileio.EMPTY):
            return LayerFile(**base, outcome=FILE_SILENT, reason=f"{got.detail}; skipped silently")
        if p == fileio.FIFO:
            return LayerFile(
                **base,
                outcome=FILE_FIFO,
                reason="a FIFO: the loader waits for a writer, so every Vulkan application hangs",
            )
        if p == fileio.SPECIAL:
            return LayerFile(**base, outcome=FILE_SPECIAL, reason=got.detail)
        return LayerFile(
            **base, outcome=FILE_TOO_LARGE, reason=f"{got.detail}; vkdoctor refuses to parse it"
        )
    try:
        root = cjson.parse_for(
            got.data, nesting_limit=loader.json_nesting_limit, crash_depth=MAX_DEPTH
        )
    except cjson.TooDeep as exc:
        return LayerFile(
            **base,
            outcome=FILE_CRASH,
            reason=f"has {exc}; the loader's recursive JSON parser overflows its stack on it "
            f"(loader 1.3.239, 8 MiB stack: measured to survive {cjson.PARSE_CRASH_DEPTH} levels "
            "and to crash at 175000)",
        )
    except cjson.TooMany as exc:
        return LayerFile(
            **base, outcome=FILE_TOO_DEEP, reason=f"has {exc}; vkdoctor stopped reading it"
        )
    except cjson.ParseError as exc:
        why = f"not valid JSON ({exc}); {loader.json_error_effect()}"
        if loader.json_error_aborts:
            why += ", whatever the layer filters say"
        return LayerFile(**base, outcome=FILE_JSON_ERROR, reason=why)
    try:
        return _layers_of(ctx, mf, root, base, enable, disable, loader, explicit)
    except cjson.LoaderHang as exc:
        return LayerFile(
            **base, outcome=FILE_CRASH, reason=f"{exc}; vkCreateInstance stalls reading it"
        )
    except cjson.LoaderCrash as exc:
        return LayerFile(**base, outcome=FILE_CRASH, reason=f"{exc}; the loader crashes on it")


def _layers_of(
    ctx: Context,
    mf: ManifestFile,
    root: cjson.Node,
    base: dict[str, Any],
    enable: Filter,
    disable: Filter,
    loader: LoaderVersion,
    explicit: bool = False,
) -> LayerFile:
    if root.type != cjson.OBJECT:
        return LayerFile(**base, outcome=FILE_NOT_OBJECT, reason="top level is not a JSON object")
    ffv = cjson.get(root, "file_format_version", loader.json_lookup)
    if ffv is None:
        return LayerFile(**base, outcome=FILE_NO_FILE_FORMAT, reason="no 'file_format_version'")
    printed = cjson.print_value(ffv)
    base["file_format_version"] = _text(ffv.string if ffv.type == cjson.STRING else printed)
    version = version_triple(parse_version(printed))
    layers_node = cjson.get(root, "layers", loader.json_lookup)
    nodes: list[cjson.Node]
    if layers_node is not None:
        nodes = list(layers_node.children)
    else:
        layer_node = cjson.get(root, "layer", loader.json_lookup)
        if layer_node is None:
            return LayerFile(**base, outcome=FILE_NO_LAYER, reason="no 'layer' or 'layers'")
        # the loader walks from "layer" through every later key of the top-level object
        at = root.children.index(layer_node)
        nodes = root.children[at:]
        if len(nodes) > 1 and version >= (1, 0, 1):
            return LayerFile(
                **base,
                outcome=FILE_MULTIPLE_LAYER,
                reason="keys after 'layer' read as more 'layer' objects, refused for file version >= 1.0.1",
            )
    layers = tuple(_layer(ctx, mf, n, enable, disable, loader, explicit) for n in nodes)
    return LayerFile(**base, outcome=FILE_OK, reason="read", layers=layers)


def implicit_layer_scan(ctx: Context) -> LayerScan:
    """Fact: every implicit layer manifest, its layers and whether each is active."""
    return ctx.fact(layer_selection)[0]


def explicit_layer_scan(ctx: Context) -> LayerScan:
    """Fact: the explicit layer manifests and which layers the environment turns on in every
    instance (`explicit_layer_files`), after the loader's selection."""
    return ctx.fact(layer_selection)[1]


def layer_selection(ctx: Context) -> tuple[LayerScan, LayerScan]:
    """Fact: the implicit and explicit scans after meta layers, the override layer and its
    blacklist have had their effect (`vkdoctor.loader.selection`)."""
    from vkdoctor.loader.selection import select

    return select(ctx.fact(implicit_layer_files), ctx.fact(explicit_layer_files))


def implicit_layer_files(ctx: Context) -> LayerScan:
    """Every implicit layer manifest, its layers and whether each is enabled on its own."""
    loader = ctx.fact(loader_version)
    plan = implicit_layer_plan(ctx)
    files, _problems = scan(ctx, plan)
    enable = parse_filter("VK_LOADER_LAYERS_ENABLE", secure_getenv(ctx, "VK_LOADER_LAYERS_ENABLE"))
    disable = parse_layer_disable(
        "VK_LOADER_LAYERS_DISABLE", secure_getenv(ctx, "VK_LOADER_LAYERS_DISABLE")
    )
    out: list[LayerFile] = []
    aborted: LayerFile | None = None
    for mf in files:
        lf = _file(ctx, mf, loader, enable, disable)
        out.append(lf)
        if lf.outcome in (FILE_FIFO, FILE_CRASH) or (
            lf.outcome == FILE_JSON_ERROR and loader.json_error_aborts
        ):
            aborted = lf
            break
    return LayerScan(
        plan=plan,
        files=tuple(out),
        loader=loader,
        enable=enable,
        disable=disable,
        aborted_by=aborted,
    )


def explicit_layer_files(ctx: Context) -> LayerScan:
    """The explicit layer manifests and which layers the environment turns on in every
    instance (VK_INSTANCE_LAYERS, VK_LOADER_LAYERS_ENABLE). The loader reads every explicit
    manifest in vkCreateInstance, chosen or not: one that stops it (a FIFO, a parser crash, or
    on loaders older than 1.3.268 a JSON syntax error) stops every application, so the files
    are read even when no variable asks for a layer."""
    loader = ctx.fact(loader_version)
    plan = _explicit_plan(ctx)
    enable = parse_filter("VK_LOADER_LAYERS_ENABLE", secure_getenv(ctx, "VK_LOADER_LAYERS_ENABLE"))
    disable = parse_layer_disable(
        "VK_LOADER_LAYERS_DISABLE", secure_getenv(ctx, "VK_LOADER_LAYERS_DISABLE")
    )
    found, _problems = scan(ctx, plan)
    files = tuple(_file(ctx, mf, loader, enable, disable, explicit=True) for mf in found)
    return LayerScan(plan=plan, files=files, loader=loader, enable=enable, disable=disable)


def _explicit_plan(ctx: Context) -> SearchPlan:
    """The explicit layer search list; an enabled override layer's override_paths replace it."""
    from vkdoctor.loader.selection import global_override

    implicit = ctx.fact(implicit_layer_files)
    override = global_override(implicit.layers) if implicit.aborted_by is None else None
    if override is not None and override.active and override.override_paths:
        return override_layer_plan(override.override_paths, override.manifest)
    return explicit_layer_plan(ctx)
