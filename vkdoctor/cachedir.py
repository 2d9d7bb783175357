"""vkdoctor's own cache directory, and the environment that keeps the drivers' caches in it."""

from __future__ import annotations

import os

# os alone at the top: the load test's request handed ahead needs this module before pathlib
# is imported (vkdoctor.speed.zygote)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def cache_path(env: Mapping[str, str]) -> str:
    """$XDG_CACHE_HOME/vkdoctor, else ~/.cache/vkdoctor."""
    base = env.get("XDG_CACHE_HOME") or ""
    if not base.startswith("/"):
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".cache")
    # spelt as pathlib spells it (no empty or "." parts): this is also the shader cache's name
    parts = [p for p in os.path.join(base, "vkdoctor").split("/") if p not in ("", ".")]
    return ("/" if base.startswith("/") else "") + "/".join(parts)


def distrusted(env: Mapping[str, str]) -> str | None:
    """Why vkdoctor's cache in `env` is not used at all (nothing read from it, nothing written
    to it), or None: someone other than root and this user could change it or a folder above
    it (vkdoctor.trust), as when root runs with another user's HOME or XDG_CACHE_HOME (sudo -E).
    What a cache holds is believed (a kept report is printed again, kept facts are used), so
    only this user's own may be."""
    from vkdoctor.trust import untrusted

    return untrusted(cache_path(env), container=True)


def nothing_kept(env: Mapping[str, str]) -> bool:
    """Whether no run has kept anything in env's cache yet (its facts/ folder, where
    vkdoctor.speed.factcache keeps them, is not there): a first run, as in a fresh CI container."""
    return not os.path.isdir(os.path.join(cache_path(env), "facts"))


def cache_home(env: Mapping[str, str]) -> Path:
    """`cache_path` as a Path."""
    from pathlib import Path

    return Path(cache_path(env))


def _untrusted_above(path: str) -> bool:
    """Whether another user could change `path` or a directory above it (the overlay store's
    rule, vkdoctor.trust)."""
    from vkdoctor.trust import untrusted

    return untrusted(path, container=True) is not None


def driver_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a child that loads Vulkan drivers (the load test, the probe): Mesa writes its
    shader cache under vkdoctor's directory, not the user's. Mesa 22.3 takes the cache's base
    from MESA_SHADER_CACHE_DIR, then MESA_GLSL_CACHE_DIR (with a deprecation warning on
    stderr), then $XDG_CACHE_HOME, then ~/.cache; its single-file and database caches go under
    the same base. The first one set wins, so this one is the only one vkdoctor sets.

    A cache the user chose (MESA_SHADER_CACHE_DIR or MESA_GLSL_CACHE_DIR set) stays theirs: it
    is where their programs write, so a full or read-only one must fail the probe as it fails
    them (VKS002 names it), not be stepped around."""
    env = {**env, **foreign_code_off(env)}
    if env.get("MESA_SHADER_CACHE_DIR") or env.get("MESA_GLSL_CACHE_DIR"):
        return env
    mesa = os.path.join(cache_path(env), "mesa")
    if _untrusted_above(mesa):
        # nothing is created where another user can swap it (the overlay store falls back to a
        # private directory for the same reason); the children then keep no shader cache
        return {**env, "MESA_SHADER_CACHE_DISABLE": "true"}
    # Mesa makes only the last directory of the path: without its parents it keeps no cache
    try:
        os.makedirs(mesa, exist_ok=True)
    except OSError:
        pass
    return {**env, "MESA_SHADER_CACHE_DIR": mesa}


def load_test_env(env: Mapping[str, str]) -> dict[str, str]:
    """The load test's child's environment for a run in `env`."""
    return {**driver_env(env), "LC_ALL": "C"}


def foreign_code_off(env: Mapping[str, str]) -> dict[str, str]:
    """What keeps vkdoctor's children from loading the drivers and implicit layers that another
    user could have put where the loader finds them (a manifest or library of theirs to change,
    by vkdoctor.trust): the layers' disable_environment variables, and the drivers' manifest
    names in VK_LOADER_DRIVERS_DISABLE. A child of vkdoctor's, often run as root, must not run
    their code; every application run in `env` does, and the load test fails on it (VKT001,
    VKT003)."""
    from vkdoctor.loader.search import driver_plan, implicit_layer_plan
    from vkdoctor.model.context import Context
    from vkdoctor.trust import untrusted

    ctx = Context(env=dict(env))
    try:
        folders = [e.path for plan in (driver_plan, implicit_layer_plan) for e in plan(ctx).entries]
    except Exception:
        return {}
    if all(not os.path.exists(f) or untrusted(f) is None for f in folders):
        return {}  # the usual case, decided by a few lstat calls: no manifest is read

    def foreign(*paths: str | None) -> bool:
        return any(p and p.startswith("/") and untrusted(p) for p in paths)

    from vkdoctor.loader.icd import driver_scan
    from vkdoctor.loader.layers import implicit_layer_scan

    off: dict[str, str] = {}
    try:
        layers = implicit_layer_scan(ctx).layers
        drivers = driver_scan(ctx).drivers
    except Exception:
        return {}
    for layer in layers:
        if layer.disable_env and foreign(layer.manifest, layer.library_found or layer.library):
            off[layer.disable_env] = "1"
    names = sorted({d.basename for d in drivers if foreign(d.manifest, d.library)})
    if names:
        given = env.get("VK_LOADER_DRIVERS_DISABLE")
        off["VK_LOADER_DRIVERS_DISABLE"] = ",".join([*([given] if given else []), *names])
    return off
