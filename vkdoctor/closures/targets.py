"""The load targets, each one's resolution (vkdoctor.elf), and the undefined symbols per target."""

from __future__ import annotations

from vkdoctor.elf.resolve import Resolution, resolve
from vkdoctor.elf.search import SearchInputs
from vkdoctor.elf.symbols import Undefined, undefined_symbols
from vkdoctor.loader import load_targets
from vkdoctor.loader.targets import LoadTarget
from vkdoctor.model.context import Context


def targets(ctx: Context) -> tuple[LoadTarget, ...]:
    """The libraries the loader will dlopen. The one seam tests replace."""
    return tuple(load_targets(ctx))


def resolve_target(
    ctx: Context, target: LoadTarget, *, inputs: SearchInputs | None = None
) -> Resolution:
    """What ld.so does when the Vulkan loader dlopens `target` (from libvulkan.so.1)."""
    return resolve(ctx, target.dlopen_name, inputs=inputs, caller="loader")


def target_resolutions(ctx: Context) -> tuple[tuple[LoadTarget, Resolution], ...]:
    """Each load target with its resolution; computed once per run (`ctx.fact`)."""
    return tuple((t, resolve_target(ctx, t)) for t in targets(ctx))


def undefined_by_target(
    ctx: Context,
) -> tuple[tuple[LoadTarget, Resolution, tuple[Undefined, ...]], ...]:
    """Each resolvable target with the strong undefined symbols of its closure (rule E6);
    computed once per run, shared by VKL006 and the load test's prediction (VKT004)."""
    out = []
    for t, res in ctx.fact(target_resolutions):
        if not res.ok:
            continue
        new = [(lib.path, lib.elf.bind_now) for lib in res.libraries if not lib.preloaded]
        scope = [*res.process, *(p for p, _ in new)]
        out.append((t, res, undefined_symbols(ctx, new, scope)))
    return tuple(out)
