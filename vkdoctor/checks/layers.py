"""VKI: implicit layers, which the loader puts into every Vulkan application unless switched off."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from vkdoctor import facts
from vkdoctor.checks.base import Check
from vkdoctor.loader import layers as L
from vkdoctor.loader.filters import matches
from vkdoctor.loader.layerrecords import OVERRIDE_LAYER, Layer, LayerScan, may_load
from vkdoctor.loader.version import LoaderVersion
from vkdoctor.model import Finding, Remedy
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.model.shellwords import export_command
from vkdoctor.packages.commands import install_each


def _ev(layer: Layer) -> dict[str, object]:
    return {
        "name": layer.name,
        "manifest": layer.manifest,
        "origin": layer.origin,
        "active": layer.active,
        "activation": layer.activation,
        "library_path": layer.library_path,
        "library": layer.library_found or layer.library,
        "library_state": layer.library_state,
        "disable_environment": {layer.disable_env: layer.disable_value}
        if layer.disable_env
        else None,
        "enable_environment": {layer.enable_env: layer.enable_value} if layer.enable_env else None,
        "invalid": layer.invalid,
    }


def _summary(layer: Layer, winner: Layer | None = None) -> str:
    state = "ACTIVE" if layer.active else "off"
    lib = layer.library_found or layer.library or "meta-layer: " + ", ".join(layer.component_layers)
    off = f"; turn off with {layer.disable_env}=<anything>" if layer.disable_env else ""
    if layer.off is not None:
        off = f"; turn off: {layer.off.shown()}"
    if layer.origin in ("VK_IMPLICIT_LAYER_PATH", "VK_ADD_IMPLICIT_LAYER_PATH"):
        off += f"; found through {layer.origin}"
    if layer.active and winner is not None and winner is not layer:
        # two manifests, one name: the loader keeps the last one whose library loads
        if may_load(layer):
            state = f"not used: {winner.manifest} has the same name and wins"
        else:
            state = f"not used: its library does not load, the loader uses {winner.manifest}"
    return f"{layer.name} [{state}] {layer.manifest} -> {lib} ({layer.activation}{off})"


class ImplicitLayers(Check):
    """The implicit layers on this system and whether each is active.

    An implicit layer is loaded into every Vulkan application without being asked for. Loaders
    1.3.296 and later also find them through VK_IMPLICIT_LAYER_PATH (which replaces the standard
    folders) and VK_ADD_IMPLICIT_LAYER_PATH (searched first); older ones ignore both. It is on
    unless its manifest's enable_environment variable is required and not set to the exact value,
    or VK_LOADER_LAYERS_DISABLE matches it (and VK_LOADER_LAYERS_ENABLE does not). Its
    disable_environment variable turns it off when defined with any value, even empty. On Debian 12,
    Mesa's VK_LAYER_MESA_device_select is one (turn it off with NODEVICE_SELECT=1).
    """

    code = "VKI001"
    family = "layers"
    title = "Implicit layers"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan: LayerScan = facts.layer_scan(ctx)
        valid = [x for x in scan.layers if x.invalid is None]
        active = scan.active
        evidence = {
            "search_path": [{"path": e.path, "origin": e.origin} for e in scan.plan.entries],
            "ignored_variables": dict(scan.plan.ignored),
            "layers": [_ev(x) for x in scan.layers],
        }
        ignored = "".join(f"\n{var} is set but {why}." for var, why in scan.plan.ignored)
        if not valid:
            yield self.info("No implicit layers", ignored.strip(), **evidence)
            return
        winners = {x.name: x for x in active}
        lines = [_summary(x, winners.get(x.name)) for x in valid]
        # explicit layers that an implicit meta layer (or the override layer) brings in
        brought = [x for x in facts.explicit_layers(ctx).active if x.off is not None]
        lines += [_summary(x) for x in brought]
        shown = [f"{m.name} (meta layer)" for m in scan.active_meta]
        shown += [x.name or "?" for x in active]
        yield self.info(
            f"{len(shown)} of {len(valid)} implicit layer{'s' if len(valid) != 1 else ''} "
            "active: " + (", ".join(shown) or "none"),
            "\n".join(lines) + ignored,
            **evidence,
        )


class BrokenImplicitLayer(Check):
    """An active implicit layer whose library cannot be loaded, or a layer manifest that stops the loader.

    A missing or unloadable library of an active implicit layer is skipped by the loader
    ("Requested layer ... failed to load") and the instance is still created, but the layer's
    function is lost and every application logs the error: turn it off with its
    disable_environment variable. A layer manifest with a JSON syntax error is worse on loaders
    older than 1.3.268: every vkCreateInstance fails, and no variable helps (parsing comes before
    filtering): the file must be fixed or removed.
    """

    code = "VKI002"
    family = "layers"
    title = "Broken implicit layers"
    #: a manifest that fails every vkCreateInstance leaves the probe no adapter: its consequence
    explains = ("VKR001",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return cause.evidence.get("every_instance_fails") is True

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.layer_scan(ctx)
        for f in scan.files:
            ev = {"manifest": f.manifest, "origin": f.origin, "outcome": f.outcome}
            if f.outcome == L.FILE_JSON_ERROR:
                if facts.running_loader(ctx).json_error_aborts:
                    yield self.fail(
                        f"Implicit layer manifest {f.manifest} is not valid JSON: every Vulkan application fails",
                        f"{f.manifest}: {f.reason}.{_answered(facts.running_loader(ctx), scan)}",
                        remedy=Remedy(
                            text=f"fix or remove {f.manifest} (VK_LOADER_LAYERS_DISABLE does not help)"
                        ),
                        every_instance_fails=True,
                        **ev,
                    )
                else:
                    yield self.warn(
                        f"Implicit layer manifest {f.manifest} is not valid JSON (skipped)",
                        f"{f.manifest}: {f.reason}.",
                        remedy=Remedy(text=f"fix or remove {f.manifest}"),
                        **ev,
                    )
            elif f.outcome in (L.FILE_FIFO, L.FILE_CRASH):
                yield self.fail(
                    f"Implicit layer manifest {f.manifest} stops every Vulkan application",
                    f"{f.manifest}: {f.reason}.",
                    remedy=Remedy(text=f"remove {f.manifest}"),
                    every_instance_fails=True,
                    **ev,
                )
        for layer in scan.active:
            if layer.library is None or layer.library_state == "ok":
                continue
            state = layer.library_state
            where = layer.library_found or layer.library
            if state == "wrong-class":
                # the other half of a multiarch install (Steam ships both): 32-bit programs use
                # it, and its disable_environment is often the 64-bit layer's too
                yield self.info(
                    f"Implicit layer {layer.name or repr('')} is for another architecture",
                    f"{layer.manifest} names {where}, a library of another ELF class: this "
                    "loader skips it (it logs this at INFO) and applications of that "
                    "architecture load it. Expected on multiarch systems; nothing to fix.",
                    **_ev(layer),
                )
                continue
            why = {
                "missing": "does not exist",
                "unknown": "is not in LD_LIBRARY_PATH or the standard library directories",
                "wrong-class": "is for another architecture",
                "no-entry-point": "exports neither vkNegotiateLoaderLayerInterfaceVersion nor "
                "vkGetInstanceProcAddr",
            }.get(state or "", f"cannot be loaded ({state})")
            left = _left_behind(ctx, layer) if state == "missing" else None
            yield self.warn(
                f"Active implicit layer {layer.name or repr('')}: library {where} {why}",
                f"{layer.manifest} puts {layer.name} into every application ({layer.activation}), "
                f"but its library {where} {why}; the loader logs an error and goes on without it."
                + (f" {left[0]}" if left else ""),
                remedy=left[1] if left else layer.fix,
                **_ev(layer),
            )


def _left_behind(ctx: Context, layer: Layer) -> tuple[str, Remedy] | None:
    """A manifest no package owns whose library is gone: what an uninstalled program (an
    overlay, a capture tool) leaves behind. Removing the manifest is the lasting fix; the
    disable variable holds only where it is set. None when a package owns it, or none can say."""
    from vkdoctor.packages.owner import owner

    if owner(ctx, layer.manifest) != "":
        return None
    folder = Path(layer.manifest).parent
    root = ctx.live and not os.access(folder, os.W_OK)
    off = layer.fix.shown()
    return (
        "No package owns the manifest: the program that installed the layer is gone, and left "
        "it behind.",
        Remedy(
            commands=(f"rm {shlex.quote(layer.manifest)}",),
            needs_root=root,
            text=f"(or, only where it is set: {off})",
        ),
    )


class ImplicitLayerManifest(Check):
    """Implicit layer manifests or layer entries the loader drops.

    Required: file_format_version; "layer" (or a "layers" array); in each layer name, type
    (INSTANCE or GLOBAL), api_version, implementation_version, description, library_path or
    component_layers, and for implicit layers a disable_environment object.
    """

    code = "VKI003"
    family = "layers"
    title = "Implicit layer manifests the loader drops"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.layer_scan(ctx)
        for f in scan.files:
            if f.outcome in (
                L.FILE_OPEN_FAILED,
                L.FILE_NOT_OBJECT,
                L.FILE_NO_FILE_FORMAT,
                L.FILE_NO_LAYER,
                L.FILE_MULTIPLE_LAYER,
                L.FILE_SPECIAL,
                L.FILE_TOO_LARGE,
                L.FILE_TOO_DEEP,
            ):
                yield self.warn(
                    f"Implicit layer manifest {f.manifest} is dropped",
                    f"{f.manifest}: {f.reason}.",
                    remedy=Remedy(text=f"fix or remove {f.manifest}"),
                    manifest=f.manifest,
                    origin=f.origin,
                    outcome=f.outcome,
                    every_instance_fails=True,
                )
            for layer in f.layers:
                # the override layer's own doing is VKI005's to tell
                by_override = layer.blacklisted_by is not None or (
                    layer.name == OVERRIDE_LAYER and layer.app_keys
                )
                if layer.invalid is not None and not by_override:
                    yield self.warn(
                        f"Implicit layer {layer.name or '(unnamed)'} in {f.manifest} is dropped",
                        f"{f.manifest}: {layer.invalid}.",
                        remedy=Remedy(text=f"fix or remove {f.manifest}"),
                        **_ev(layer),
                    )


class ExplicitLayersFromEnvironment(Check):
    """Explicit layers that an environment variable turns on in every Vulkan application.

    Explicit layers (validation, profiling, capture tools) are meant to be chosen by the
    application. VK_INSTANCE_LAYERS (a `:`-separated list of names) and VK_LOADER_LAYERS_ENABLE
    (globs) put them into every instance instead; the loader looks for them in the
    explicit_layer.d directories of its search path, or in VK_LAYER_PATH, which replaces it
    (VK_ADD_LAYER_PATH is searched first). A name no manifest provides is ignored; a layer that
    is found is loaded into every program, so its library is resolved (VKL001-VKL003) and
    loaded for real (VKT003) like an implicit layer's. A crashing capture layer left in a shell
    profile takes every Vulkan program down with it. The loader reads every explicit manifest in
    vkCreateInstance, chosen or not: one that crashes or hangs its parser, or (before loader
    1.3.268) one that is not valid JSON, fails every Vulkan program.
    """

    code = "VKI004"
    family = "layers"
    title = "Explicit layers turned on by the environment"
    explains = ("VKR001",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return cause.evidence.get("every_instance_fails") is True

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.explicit_layers(ctx)
        yield from self._manifests_that_stop_the_loader(scan, facts.running_loader(ctx))
        requested = L.instance_layers(ctx)
        if not requested and not scan.enable.active:
            return
        found = {layer.name for layer in scan.layers if layer.invalid is None}
        implicit = {layer.name for layer in facts.layer_scan(ctx).layers if layer.invalid is None}
        yield from self._names_no_manifest_provides(ctx, scan, requested, found, implicit)
        yield from self._patterns_that_match_nothing(scan, {n for n in found | implicit if n})
        yield from self._layers_in_every_program(scan)

    def _manifests_that_stop_the_loader(
        self, scan: LayerScan, running: LoaderVersion
    ) -> Iterable[Finding]:
        answered = _answered(running, scan)
        for f in scan.files:
            # the loader reads every explicit manifest at vkCreateInstance, chosen or not
            aborts = f.outcome == L.FILE_JSON_ERROR and running.json_error_aborts
            if f.outcome in (L.FILE_FIFO, L.FILE_CRASH) or aborts:
                what = "is not valid JSON: every Vulkan application fails"
                yield self.fail(
                    f"Explicit layer manifest {f.manifest} "
                    + (what if aborts else "stops every Vulkan application"),
                    f"{f.manifest}: {f.reason}.{answered} The loader reads every explicit layer "
                    "manifest in vkCreateInstance, whether a program asks for the layer or not, "
                    "so no driver is at fault and none gets an instance while the file is there.",
                    remedy=Remedy(
                        text=f"{'fix or remove' if aborts else 'remove'} {f.manifest} "
                        "(VK_LOADER_LAYERS_DISABLE does not help: the file is parsed first)"
                    ),
                    manifest=f.manifest,
                    origin=f.origin,
                    outcome=f.outcome,
                    every_instance_fails=True,
                )
            elif f.outcome == L.FILE_JSON_ERROR and running.version is None:
                yield self.warn(
                    f"Explicit layer manifest {f.manifest} is not valid JSON: loaders before "
                    "1.3.268 fail every Vulkan application on it",
                    f"{f.manifest}: {f.reason}.",
                    remedy=Remedy(text=f"fix or remove {f.manifest}"),
                    manifest=f.manifest,
                    origin=f.origin,
                    outcome=f.outcome,
                )

    def _names_no_manifest_provides(
        self,
        ctx: Context,
        scan: LayerScan,
        requested: list[str],
        found: set[str | None],
        implicit: set[str | None],
    ) -> Iterable[Finding]:
        absent = [e.path for e in scan.plan.entries if not ctx.under(e.path).exists()]
        for name in requested:
            if name in found:
                continue
            shown = repr(name) if name != name.strip() else name
            why, fix = _why_no_manifest(name, scan, implicit, absent)
            yield self.warn(
                f"VK_INSTANCE_LAYERS names {shown}, which no explicit layer manifest provides",
                f"{why[0].upper()}{why[1:]}; the loader ignores the name: no layer is loaded "
                "for it.",
                remedy=fix,
                name=name,
                search_path=[e.path for e in scan.plan.entries],
            )

    def _patterns_that_match_nothing(self, scan: LayerScan, names: set[str]) -> Iterable[Finding]:
        for tok in scan.enable.tokens:
            if tok.kind == "special":
                continue
            one = replace(scan.enable, tokens=(tok,))
            if any(matches(n, one) for n in names):
                continue
            pattern = {"substring": "*{}*", "suffix": "*{}", "prefix": "{}*"}.get(
                tok.kind, "{}"
            ).format(tok.value)
            yield self.warn(
                f"VK_LOADER_LAYERS_ENABLE pattern {pattern} matches no layer",
                f"VK_LOADER_LAYERS_ENABLE={scan.enable.raw}: {pattern} matches none of the "
                f"{len(names)} layers the loader finds ({', '.join(sorted(names)) or 'none'}), "
                "so it turns nothing on.",
                remedy=Remedy(
                    text=(
                        f"install the Khronos validation layer ({install_each('validation-layers')})"
                        if "valid" in tok.value
                        else "install the layer"
                    )
                    + ", point VK_ADD_LAYER_PATH at its manifest's directory, or fix the pattern"
                ),
                pattern=pattern,
                layers=sorted(names),
                search_path=[e.path for e in scan.plan.entries],
            )

    def _layers_in_every_program(self, scan: LayerScan) -> Iterable[Finding]:
        for layer in scan.active:
            off = layer.remedy
            by_glob = layer.activation.startswith("forced on by VK_LOADER_LAYERS_ENABLE") and any(
                t.kind != "full" for t in scan.enable.tokens
            )
            if by_glob:
                yield self.warn(
                    f"{layer.name} is in every Vulkan application ({layer.activation})",
                    f"The pattern VK_LOADER_LAYERS_ENABLE={scan.enable.raw} forces the explicit "
                    f"layer {layer.name} ({layer.manifest} -> {layer.library}) into every "
                    "Vulkan program; explicit layers are debugging and capture tools meant for "
                    "the programs that ask for them, and VK_LOADER_LAYERS_DISABLE cannot take "
                    "out what this variable forces in. Its library is checked under "
                    "VKL001-VKL003 and loaded for real under VKT003.",
                    remedy=Remedy(text=f"{off[0].upper()}{off[1:]}."),
                    **_ev(layer),
                )
                continue
            yield self.info(
                f"{layer.name} is in every Vulkan application ({layer.activation})",
                f"{layer.manifest} -> {layer.library}. Its library is checked under VKL001-VKL003 "
                f"and loaded for real under VKT003. To turn it off: {off}.",
                **_ev(layer),
            )


def _why_no_manifest(
    name: str, scan: LayerScan, implicit: set[str | None], absent: list[str]
) -> tuple[str, Remedy]:
    """Why no explicit layer manifest provides the VK_INSTANCE_LAYERS entry `name`, and the fix."""
    if name != name.strip():
        shown = repr(name)
        return (
            f"the loader does not trim names: {shown} has spaces, so it matches no layer",
            Remedy(text=f"remove the spaces around {name.strip()} in VK_INSTANCE_LAYERS"),
        )
    if name in implicit:
        return (
            f"{name} is an implicit layer: it is on or off by its own rules (VKI001)",
            Remedy(text=f"remove {name} from VK_INSTANCE_LAYERS"),
        )
    plan = scan.plan
    if plan.override and absent:
        return (
            f"{plan.override}={plan.override_value} replaces the layer search path, and "
            f"{', '.join(absent)} does not exist",
            Remedy(
                commands=(f"unset {plan.override}",),
                text=", or point it at the layer's manifest directory",
            ),
        )
    where = (
        f"{plan.override}={plan.override_value}"
        if plan.override
        else "the explicit_layer.d directories: " + ", ".join(e.path for e in plan.entries)
    )
    return (
        f"the loader looks for it in {where} and finds no manifest",
        Remedy(
            text=f"remove {name} from VK_INSTANCE_LAYERS, or install the layer (or point "
            "VK_ADD_LAYER_PATH at its manifest's directory)"
        ),
    )


class OverrideLayer(Check):
    """The override layer that vkconfig (the Vulkan Configurator) writes, and what it does.

    vkconfig controls the layers of every Vulkan application by writing an implicit meta layer
    named VK_LAYER_LUNARG_override (VkLayer_override.json, usually in
    ~/.local/share/vulkan/implicit_layer.d). While that file is there and the layer is on, the
    loader (1.3.239 here) loads its `component_layers` in every application, even layers that
    are off on their own or whose disable variable is set; does not load any layer named in its
    `blacklisted_layers`, whatever VK_INSTANCE_LAYERS or VK_LOADER_LAYERS_ENABLE ask; and, when
    it has `override_paths`, looks for explicit layers only there (VK_LAYER_PATH,
    VK_ADD_LAYER_PATH and the standard directories are ignored). An override layer with
    `app_keys` applies only to the programs those paths name. A missing or older component drops
    the whole override layer (and so its blacklist).
    """

    code = "VKI005"
    family = "layers"
    title = "Layers overridden by vkconfig"

    def run(self, ctx: Context) -> Iterable[Finding]:
        scan = facts.layer_scan(ctx)
        explicit = facts.explicit_layers(ctx)
        every = (*scan.layers, *explicit.layers)
        for layer in scan.layers:
            if layer.name != OVERRIDE_LAYER:
                continue
            if layer.invalid is not None or not layer.active:
                yield self.info(
                    f"vkconfig's override layer in {layer.manifest} is not in force",
                    f"{layer.manifest}: {layer.invalid or layer.activation}.",
                    **_ev(layer),
                )
                continue
            lines = _override_effects(layer, every, (*scan.active, *explicit.active))
            yield self.warn(
                f"vkconfig's override layer {layer.manifest} changes the layers of every "
                "Vulkan application",
                "\n".join(lines),
                remedy=Remedy(
                    commands=tuple(
                        c
                        for c in [
                            export_command(layer.disable_env or "", layer.disable_value or "1")
                        ]
                        if c
                    ),
                    text=f", or in vkconfig let the applications choose their layers, or "
                    f"remove {layer.manifest}",
                ),
                **_ev(layer),
                blacklisted=[x.manifest for x in every if x.blacklisted_by == layer.manifest],
                override_paths=list(layer.override_paths),
            )


def _override_effects(
    override: Layer, every: tuple[Layer, ...], active: tuple[Layer, ...]
) -> list[str]:
    """What the override layer in force does, a line each."""
    lines = [f"{override.manifest} ({override.activation}):"]
    loaded = {x.name: x for x in active}
    for name in override.component_layers:
        got = loaded.get(name)
        state = f"in every application ({got.manifest})" if got else "not loaded here"
        lines.append(f"  forces on {name}: {state}")
    for name in override.blacklisted_layers:
        hit = [x for x in every if x.name == name and x.blacklisted_by == override.manifest]
        where = ", ".join(x.manifest for x in hit)
        lines.append(
            f"  blacklists {name}: not loaded ({where})"
            if hit
            else f"  blacklists {name} (not installed here)"
        )
    if override.override_paths:
        lines.append(
            "  explicit layers are looked for only in "
            + ", ".join(override.override_paths)
            + " (VK_LAYER_PATH, VK_ADD_LAYER_PATH and the standard directories are ignored)"
        )
    return lines


def _answered(running: LoaderVersion, scan: LayerScan) -> str:
    """A sentence when the loader's version comes from its answer to the load test (its file
    did not say), for a finding that follows that version."""
    if running.version == scan.loader.version:
        return ""
    return f" The loader answered the load test that it is version {running.text}."


CHECKS: tuple[type[Check], ...] = (
    ImplicitLayers,
    BrokenImplicitLayer,
    ImplicitLayerManifest,
    ExplicitLayersFromEnvironment,
    OverrideLayer,
)
