"""The loader's library lookups: bare names through the ld.so emulation, symlink chains by hand."""

from __future__ import annotations

from vkdoctor.model.context import Context


def find_bare(ctx: Context, name: str) -> str | None:
    """Where dlopen(name) from libvulkan.so.1 finds a bare library_path, by the ld.so emulation."""
    from vkdoctor.elf.resolve import dlopen_lookup

    found = dlopen_lookup(ctx, name).found
    return found.path if found is not None else None


def bare_stopped_at(ctx: Context, name: str) -> tuple[str, str] | None:
    """(the file, ld.so's error) when the search for a bare library_path ends at a file that
    cannot be loaded (cut short, not ELF, on a noexec mount), not at nothing."""
    from vkdoctor.elf.resolve import dlopen_lookup

    lk = dlopen_lookup(ctx, name)
    bad = next((t for t in lk.tried if t.outcome == "bad_elf"), None)
    if lk.found is not None or bad is None or bad.path is None:
        return None
    return bad.path, lk.error or bad.detail


def final_name(ctx: Context, path: str, *, max_links: int = 40) -> str | None:
    """The file name at the end of `path`'s symlink chain, resolving links inside the root."""
    current = path
    for _ in range(max_links):
        host = ctx.under(current)
        try:
            target = str(host.readlink())
        except OSError:
            return current.rsplit("/", 1)[-1] if host.exists() else None
        if not target.startswith("/"):
            target = current.rsplit("/", 1)[0] + "/" + target
        current = target
    return None
