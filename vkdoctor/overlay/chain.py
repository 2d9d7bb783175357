"""A load target's dependency chain, as ld.so resolves it in one environment.

The overlay reasons about edges (consumer, soname) -> resolved file. `resolve_chain` builds them with
the ELF helper's resolver; a different LD_LIBRARY_PATH is a different Context (`with_ld_path`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vkdoctor.model.context import Context
from vkdoctor.model.record import record, replace

if TYPE_CHECKING:
    from vkdoctor.elf.resolve import Resolution


@record(frozen=True, kw_only=True)
class Edge:
    """One DT_NEEDED entry of one library, and the file ld.so would load for it (None: missing)."""

    consumer: str
    soname: str
    resolved: str | None
    #: non-weak symbol versions the consumer needs from the soname
    versions: tuple[str, ...] = ()
    #: the consumer's ELF class (32/64) and machine
    elf_class: int = 64
    machine: str = "EM_X86_64"


@record(frozen=True, kw_only=True)
class Chain:
    """The closure of one library: every edge ld.so follows, breadth first."""

    root: str
    edges: tuple[Edge, ...]
    #: the root itself could not be read or found
    error: str | None = None
    #: the places an RPATH, RUNPATH or LD_LIBRARY_PATH made ld.so look in before it found a
    #: name elsewhere (or nowhere): (folder/name, how, whose RPATH/RUNPATH)
    searched: tuple[tuple[str, str, str | None], ...] = ()

    def missing(self) -> list[Edge]:
        return [e for e in self.edges if e.resolved is None]

    def loaded(self) -> dict[str, tuple[str, str]]:
        """soname -> (file, first consumer) of everything this chain loads."""
        out: dict[str, tuple[str, str]] = {}
        for e in self.edges:
            if e.resolved is not None and e.soname not in out:
                out[e.soname] = (e.resolved, e.consumer)
        return out

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the JSON has the missing edges only, not every edge
        return {
            "root": self.root,
            "error": self.error,
            "missing": [{"soname": e.soname, "needed_by": e.consumer} for e in self.missing()],
        }


def with_ld_path(ctx: Context, value: str | None) -> Context:
    """The same context with LD_LIBRARY_PATH set to `value` (removed for None), facts not shared."""
    env = dict(ctx.env)
    if value is None:
        env.pop("LD_LIBRARY_PATH", None)
    else:
        env["LD_LIBRARY_PATH"] = value
    return replace(ctx, env=env, _facts={})


def resolve_chain(ctx: Context, target: str) -> Chain:
    """The closure of `dlopen(target)` from libvulkan.so.1 in ctx's environment (vkdoctor.elf)."""
    from vkdoctor.elf.resolve import resolve

    return from_resolution(target, resolve(ctx, target, near=False))


def from_resolution(target: str, res: Resolution) -> Chain:
    """The edges of an ELF-helper Resolution."""
    elves = {lib.path: lib.elf for lib in res.libraries}
    edges: list[Edge] = []
    for lib in res.libraries:
        if lib.needed_by is None:
            continue
        name = lib.soname or lib.name
        for consumer in lib.needed_by_all or (lib.needed_by,):
            edges.append(Edge(consumer=consumer, soname=name, resolved=lib.realpath))
    for miss in res.misses:
        if miss.needed_by is None:
            return Chain(root=target, edges=tuple(edges), error=miss.error or "not found")
        if miss.bad_file is not None:
            # not missing: a broken copy won the search, and the fix is to take it away
            # (VKL002), not to put another copy in front of it
            continue
        elf = elves.get(miss.needed_by)
        versions: tuple[str, ...] = ()
        elf_class, machine = 64, "EM_X86_64"
        if elf is not None:
            elf_class, machine = elf.elf_class, elf.machine
            versions = tuple(
                v
                for need in elf.versions_needed_from(miss.name)
                for v in need.versions
                if v not in need.weak
            )
        edges.append(
            Edge(
                consumer=miss.needed_by,
                soname=miss.name,
                resolved=None,
                versions=versions,
                elf_class=elf_class,
                machine=machine,
            )
        )
    searched = tuple(
        (f"{t.where.rstrip('/')}/{name}", t.how.value, t.origin_of) for name, t in res.searched
    )
    return Chain(root=target, edges=tuple(edges), searched=searched)
