"""Turn resolution data into short sentences for finding messages. No analysis here."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from vkdoctor.elf.ldcache import load_cache
from vkdoctor.elf.nearmiss import NearMiss
from vkdoctor.elf.platform import ldso_platform
from vkdoctor.elf.resolve import Library, VersionProblem
from vkdoctor.elf.search import How, Tried
from vkdoctor.model.context import Context
from vkdoctor.model.digits import digits_key, is_digits

HOW_WORDS = {
    How.PATH: "by its path",
    How.RPATH: "through DT_RPATH",
    How.LD_LIBRARY_PATH: "through LD_LIBRARY_PATH",
    How.RUNPATH: "through DT_RUNPATH",
    How.CACHE: "through /etc/ld.so.cache",
    How.DEFAULT: "in a system directory",
    How.PRELOAD: "through LD_PRELOAD",
    How.LOADED: "already loaded in the process",
}


def how_found(lib: Library) -> str:
    words = HOW_WORDS[lib.how]
    if lib.how in (How.RPATH, How.LD_LIBRARY_PATH, How.RUNPATH, How.DEFAULT) and lib.directory:
        return f"{words} ({lib.directory})"
    return words


def places_tried(tried: Sequence[Tried], ctx: Context | None = None) -> str:
    """'LD_LIBRARY_PATH /a, /b; DT_RUNPATH of X: /c; ld.so.cache; system dirs /lib, /usr/lib'."""
    parts: list[str] = []
    groups: dict[tuple[How, str | None], list[str]] = {}
    order: list[tuple[How, str | None]] = []
    for t in tried:
        key = (t.how, t.origin_of)
        if key not in groups:
            groups[key] = []
            order.append(key)
        where = t.where or "(empty entry: the current directory)"
        note = ""
        if t.outcome == "wrong_class":
            note = f" [{t.path}: {t.detail}]"
        elif t.outcome in ("wrong_machine", "unreadable", "bad_elf", "skipped"):
            note = f" [{t.outcome.replace('_', ' ')}{': ' + t.detail if t.detail else ''}]"
        if t.how is How.CACHE:
            where = "ld.so.cache" + (
                f" (lists {t.path}, which is gone: run ldconfig)"
                if t.path and t.outcome == "absent"
                else f" (has {t.path})"
                if t.path and t.outcome != "found"
                else ""
            )
        groups[key].append(where + note)
    for how, origin in order:
        label = {
            How.RPATH: "DT_RPATH",
            How.RUNPATH: "DT_RUNPATH",
            How.LD_LIBRARY_PATH: "LD_LIBRARY_PATH",
            How.DEFAULT: "system directories",
            How.CACHE: "",
            How.PATH: "path",
        }.get(how, how.value)
        if origin:
            label += f" of {posixpath.basename(origin)}"
        items = ", ".join(groups[(how, origin)])
        parts.append(f"{label} {items}".strip())
    if ctx is not None and ctx.fact(load_cache) is None:
        parts.append("(no /etc/ld.so.cache in this root: ld.so.conf directories are not searched)")
    return "; ".join(parts) if parts else "nowhere"


def near_text(near: Sequence[NearMiss], limit: int = 4) -> str:
    if not near:
        return ""
    shown = [n.describe() for n in near[:limit]]
    more = f" and {len(near) - limit} more" if len(near) > limit else ""
    return "Near misses: " + "; ".join(shown) + more + "."


def version_sentence(v: VersionProblem) -> str:
    missing = ", ".join(v.missing)
    highest = v.provider_defines[-1] if v.provider_defines else None
    offers = f"defines only up to {highest}" if highest else "does not define it"
    how = HOW_WORDS[v.provider_how]
    text = (
        f"{v.required_by} needs {missing} from {v.soname}, but the copy that wins, "
        f"{v.provider} (found {how}, in {v.provider_dir}), {offers}."
    )
    if v.better:
        copies = ", ".join(n.path for n in v.better[:3])
        text += f" {v.provider_dir} shadows {copies}, which defines {missing}."
    return text


def system_copy(ctx: Context, soname: str) -> str | None:
    """The path ld.so.cache or the system directories give for `soname`, if any."""
    plat = ctx.fact(ldso_platform)
    cache = ctx.fact(load_cache)
    if cache is not None:
        entry = cache.lookup(soname, plat.machine, plat.hwcaps)
        if entry is not None:
            return entry.path
    for d in plat.system_dirs:
        if ctx.under(posixpath.join(d, soname)).exists():
            return posixpath.join(d, soname)
    return None


def version_node_key(name: str) -> tuple[str, tuple[tuple[int, str], ...]]:
    """GLIBCXX_3.4.30 -> ("GLIBCXX", (3, 4, 30)) (each number as a `digits_key`); a name
    without a number is its own family."""
    family, _, number = name.rpartition("_")
    parts = number.split(".")
    if not all(is_digits(p) for p in parts):
        return name, ()
    return family, tuple(digits_key(p) for p in parts)


def span_per_family(versions: Iterable[str]) -> list[str]:
    """ "GLIBCXX_3.4.29 to GLIBCXX_3.4.30" where a family misses more than one version, so
    that a title agrees with the error ld.so gives (the first missing one) and with the copy
    to look for (one that has the highest)."""
    spans: dict[str, list[tuple[tuple[tuple[int, str], ...], str]]] = {}
    for name in versions:
        family, key = version_node_key(name)
        spans.setdefault(family, []).append((key, name))
    out = []
    for members in spans.values():
        low, high = min(members)[1], max(members)[1]
        out.append(low if low == high else f"{low} to {high}")
    return out


def highest_per_family(versions: Iterable[str]) -> list[str]:
    """GLIBCXX_3.4.30 and CXXABI_1.3.13 out of every GLIBCXX_* and CXXABI_* missing: the copy
    that has the highest of each family has the others too."""
    best: dict[str, tuple[tuple[tuple[int, str], ...], str]] = {}
    for name in versions:
        family, key = version_node_key(name)
        if family not in best or key > best[family][0]:
            best[family] = (key, name)
    return [name for _, name in best.values()]
