"""A stand-in for the dynamic linker's search: the standard library directories of the root.

The elf helper builds the real ld.so emulation (LD_LIBRARY_PATH, ld.so.cache, hwcaps); this one
small function is what the loader part uses until that is wired in, so it is the only thing to swap.
"""

from __future__ import annotations

from vkdoctor.context import Context
from vkdoctor.loader.rootpath import host_path

_TRIPLETS = {
    "x86_64": "x86_64-linux-gnu",
    "aarch64": "aarch64-linux-gnu",
    "i686": "i386-linux-gnu",
    "i386": "i386-linux-gnu",
    "armv7l": "arm-linux-gnueabihf",
    "ppc64le": "powerpc64le-linux-gnu",
    "riscv64": "riscv64-linux-gnu",
    "s390x": "s390x-linux-gnu",
}


def standard_lib_dirs(ctx: Context) -> tuple[str, ...]:
    """Debian multiarch first, then the lib64 (Fedora, Arch) and plain lib directories."""
    dirs: list[str] = []
    triplet = _TRIPLETS.get(ctx.machine)
    if triplet:
        dirs += [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
    if ctx.machine in ("x86_64", "aarch64", "ppc64le", "riscv64", "s390x"):
        dirs += ["/lib64", "/usr/lib64"]
    dirs += ["/lib", "/usr/lib", "/usr/local/lib"]
    return tuple(dirs)


def find_in_standard_dirs(ctx: Context, name: str) -> str | None:
    """The first standard directory holding `name` (a file or a link that resolves), as a root path."""
    for d in standard_lib_dirs(ctx):
        path = f"{d}/{name}"
        if host_path(ctx, path).exists():
            return path
    return None


def find_bare(ctx: Context, name: str) -> str | None:
    """Where dlopen(name) would look, roughly: LD_LIBRARY_PATH, then the standard directories.

    ld.so.cache and ld.so.conf directories are not read here (the elf part does that).
    """
    lib_path = None if ctx.elevated else ctx.getenv("LD_LIBRARY_PATH")
    for d in (lib_path or "").replace(";", ":").split(":"):
        if d and host_path(ctx, f"{d}/{name}").exists():
            return f"{d}/{name}"
    return find_in_standard_dirs(ctx, name)


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
