"""The Khronos Vulkan loader's view of this machine, emulated (rules of loader 1.3.239).

Public API:
- `load_targets(ctx)`: every library the loader will dlopen for a vkCreateInstance, in its order.
- `driver_scan(ctx)` / `implicit_layer_scan(ctx)`: the full analysis, through `ctx.fact`.
- `loader_version(ctx)`: which loader the rules are for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vkdoctor.loader.targets import LoadTarget

if TYPE_CHECKING:
    from vkdoctor.loader.icd import DriverScan
    from vkdoctor.loader.layerrecords import LayerScan
    from vkdoctor.loader.version import LoaderVersion, loader_version
    from vkdoctor.model.context import Context

# The scans' modules are imported when a scan is first asked for: a replayed run
# (vkdoctor.speed.replay) needs only LoadTarget and the fact's name, `load_targets`.

__all__ = [
    "DriverScan",
    "LayerScan",
    "LoadTarget",
    "LoaderVersion",
    "driver_scan",
    "explicit_layers",
    "implicit_layer_scan",
    "load_targets",
    "loader_version",
]


def __getattr__(name: str) -> object:
    if name in ("DriverScan",):
        from vkdoctor.loader import icd

        return getattr(icd, name)
    if name in ("LayerScan",):
        from vkdoctor.loader import layers

        return getattr(layers, name)
    if name in ("LoaderVersion", "loader_version"):
        from vkdoctor.loader import version

        return getattr(version, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def driver_scan(ctx: Context) -> DriverScan:
    """The driver scan of this run (computed once per Context)."""
    from vkdoctor.loader.icd import default_driver_scan

    return ctx.fact(default_driver_scan)


def layer_scan(ctx: Context) -> LayerScan:
    from vkdoctor.loader.layers import implicit_layer_scan

    return ctx.fact(implicit_layer_scan)


def explicit_layers(ctx: Context) -> LayerScan:
    from vkdoctor.loader.layers import explicit_layer_scan

    return ctx.fact(explicit_layer_scan)


def load_targets(ctx: Context) -> tuple[LoadTarget, ...]:
    """Active implicit layers (loaded by vkCreateInstance) and the drivers the loader dlopens.

    The loader scans and dlopens drivers first (in manifest order), then loads the active
    implicit layers while building the instance chain, and the explicit layers the environment
    asks for (VK_INSTANCE_LAYERS, VK_LOADER_LAYERS_ENABLE). A scan aborted by a broken manifest
    lists what is dlopened before the abort.
    """
    targets: list[LoadTarget] = []
    for d in driver_scan(ctx).drivers:
        if d.dlopened and d.library is not None:
            targets.append(
                LoadTarget(
                    kind="driver",
                    name=d.basename,
                    manifest=d.manifest,
                    dlopen_name=d.library,
                    library_arch=d.library_arch,
                )
            )
    for layer in (*layer_scan(ctx).active, *explicit_layers(ctx).active):
        if layer.library is not None and layer.name is not None:
            targets.append(
                LoadTarget(
                    kind="layer",
                    name=layer.name,
                    manifest=layer.manifest,
                    dlopen_name=layer.library,
                    library_arch=layer.library_arch,
                    off_fix=layer.fix,
                )
            )
    return tuple(targets)
