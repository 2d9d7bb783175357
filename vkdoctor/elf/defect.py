"""What exactly is wrong with a library file that won ld.so's search and cannot be used.

A copy cut short (a full disk, an interrupted copy), garbage under a library's name, a build for
another machine, or an intact file on a filesystem mounted noexec: each is named as that, with
the numbers that prove it (cut at N of M bytes, the e_machine, the mount and its option) and the
intact copy of the same soname that it shadows. Only asked on a failure's path.
"""

from __future__ import annotations

import struct
from typing import Any, Literal

from vkdoctor.elf.explain import system_copy
from vkdoctor.elf.mounts import noexec_mount
from vkdoctor.elf.names import machine_name
from vkdoctor.elf.reader import ElfInfo, read_elf
from vkdoctor.model.context import Context
from vkdoctor.model.record import record

Kind = Literal["truncated", "not_elf", "noexec", "machine", "corrupt"]

#: how a truncated file fails in glibc 2.36
Effect = Literal["file-too-short", "cannot-read-file-data", "sigbus", "zeros", "none"]

PAGE = 4096


@record(frozen=True, kw_only=True)
class Defect:
    """One unusable file, and the copy it stands in front of."""

    path: str
    kind: Kind
    size: int
    #: the size the file should have: the intact copy's (when the file is a prefix of it), else
    #: the end of what its own headers describe
    expected: int | None = None
    expected_from: str | None = None
    effect: Effect | None = None
    #: the e_machine name of a build for another machine
    machine: str | None = None
    mount: str | None = None
    option: str | None = None
    #: the loadable copy of the same soname the system would give without this one
    intact: str | None = None

    @property
    def kind_word(self) -> str:
        return {
            "truncated": "truncated",
            "not_elf": "not an ELF file",
            "machine": "built for another machine",
            "noexec": "on a noexec mount",
        }.get(self.kind, "corrupt")

    def cut(self) -> str:
        """'cut at 700 of 121280 bytes (the size of X, which it is the start of)'"""
        of = f" of {self.expected}" if self.expected else ""
        src = f" ({self.expected_from})" if self.expected_from else ""
        return f"cut at {self.size}{of} bytes{src}"

    def what(self) -> str:
        """'cut at 700 of 121280 bytes', 'not an ELF file', 'built for EM_AARCH64', ..."""
        if self.kind == "truncated":
            return f"truncated: {self.cut()}"
        if self.kind == "not_elf":
            return f"not an ELF file ({self.size} bytes without the ELF magic)"
        if self.kind == "machine":
            return f"built for another machine (e_machine {self.machine})"
        if self.kind == "noexec":
            return f"on {self.mount}, mounted {self.option}: ld.so cannot map its code"
        return "not a loadable shared object"

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the facts a defect does not have (None) are left out
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "size": self.size}
        for key in ("expected", "expected_from", "effect", "machine", "mount", "option", "intact"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


def _extent(data: bytes) -> tuple[int | None, int | None, int | None]:
    """From an ELF's own headers: (end of its program headers, end of its PT_LOAD file data,
    end of its section header table); None where the header does not say."""
    if len(data) < 52 or data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None, None, None
    e = "<" if data[5] == 1 else ">"
    try:
        if data[4] == 2:
            phoff, shoff = struct.unpack_from(e + "QQ", data, 32)
            phentsize, phnum, shentsize, shnum = struct.unpack_from(e + "HHHH", data, 54)
        else:
            phoff, shoff = struct.unpack_from(e + "II", data, 28)
            phentsize, phnum, shentsize, shnum = struct.unpack_from(e + "HHHH", data, 42)
    except struct.error:
        return None, None, None
    ph_end = phoff + phentsize * phnum
    sh_end = shoff + shentsize * shnum if shoff else None
    load_end: int | None = None
    for i in range(min(phnum, 4096)):
        off = phoff + i * phentsize
        try:
            if data[4] == 2:
                p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(e + "IIQQQQ", data, off)
            else:
                p_type, p_offset, _, _, p_filesz = struct.unpack_from(e + "IIIII", data, off)
        except struct.error:
            break
        if p_type == 1:
            load_end = max(load_end or 0, p_offset + p_filesz)
    return ph_end, load_end, sh_end


def _head(path: str, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


def _is_prefix(short: str, whole: str, size: int) -> bool:
    """The first `size` bytes of `whole` are the file `short`, compared in chunks."""
    try:
        with open(short, "rb") as a, open(whole, "rb") as b:
            left = size
            while left > 0:
                n = min(left, 1 << 20)
                if a.read(n) != b.read(n):
                    return False
                left -= n
            return True
    except OSError:
        return False


def truncation_effect(size: int, ph_end: int | None, load_end: int | None) -> Effect:
    """What glibc 2.36 does with a file of `size` bytes whose headers describe the rest."""
    if size < 64:
        return "file-too-short"
    if ph_end is None or ph_end > size:
        return "cannot-read-file-data"
    if load_end is not None and load_end > -(-size // PAGE) * PAGE:
        # mmap maps whole pages past the end of the file: touching one is SIGBUS
        return "sigbus"
    if load_end is not None and load_end > size:
        return "zeros"
    return "none"


def intact_copy(ctx: Context, soname: str, path: str, machine: str) -> str | None:
    """The loadable copy of `soname` a program gets once `path` is out of the way: the
    system's (ld.so.cache), or, when the cache names `path` itself, the one in the system
    directories that ld.so goes on to."""
    import posixpath

    from vkdoctor.elf.platform import ldso_platform

    first = system_copy(ctx, soname)
    dirs = [posixpath.join(d, soname) for d in ctx.fact(ldso_platform).system_dirs]
    try:
        mine = ctx.resolve(path)
    except OSError:
        return None
    for cand in dict.fromkeys([*([first] if first else []), *dirs]):
        try:
            if not ctx.under(cand).exists() or ctx.resolve(cand) == mine:
                continue
        except OSError:
            continue
        info = read_elf(ctx, cand)
        if isinstance(info, ElfInfo) and info.machine == machine and not noexec_mount(ctx, cand):
            return cand
    return None


def _diagnosed(ctx: Context) -> dict[tuple[str, str, str], Defect | None]:
    return {}


def diagnose(ctx: Context, path: str, soname: str, machine: str) -> Defect | None:
    """What is wrong with `path` (which won the search for `soname` in a `machine` process);
    None when nothing here explains it. Once per file per Context: the comparison with the
    intact copy reads both (libLLVM is 100 MB)."""
    memo = ctx.fact(_diagnosed)
    key = (path, soname, machine)
    if key not in memo:
        memo[key] = _diagnose(ctx, path, soname, machine)
    return memo[key]


def _diagnose(ctx: Context, path: str, soname: str, machine: str) -> Defect | None:
    host = str(ctx.under(path))
    try:
        size = ctx.under(path).stat().st_size
        head = _head(host, 64 * 1024)
    except OSError:
        return None
    intact = intact_copy(ctx, soname, path, machine)
    mount = noexec_mount(ctx, path)
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        e = "<" if head[5] == 1 else ">"
        e_machine = machine_name(struct.unpack_from(e + "H", head, 18)[0])
    else:
        e_machine = None
    ph_end, load_end, sh_end = _extent(head)
    if ph_end is not None and ph_end > len(head) and size > len(head):
        ph_end, load_end, sh_end = _extent(_head(host, ph_end))
    expected, expected_from = None, None
    if intact is not None:
        whole = ctx.under(intact).stat().st_size
        if whole > size and _is_prefix(host, str(ctx.under(intact)), size):
            expected, expected_from = whole, f"the size of {intact}, which it is the start of"
    if expected is None:
        ends = [x for x in (load_end, sh_end) if x is not None]
        if ends and max(ends) > size:
            expected, expected_from = max(ends), "the end its own headers give"
    if expected is not None and expected > size:
        return Defect(
            path=path,
            kind="truncated",
            size=size,
            expected=expected,
            expected_from=expected_from,
            effect=truncation_effect(size, ph_end, load_end),
            intact=intact,
        )
    if size < 64 and head[:4] == b"\x7fELF":
        return Defect(
            path=path, kind="truncated", size=size, effect="file-too-short", intact=intact
        )
    if head[:4] != b"\x7fELF":
        return Defect(path=path, kind="not_elf", size=size, intact=intact)
    if e_machine is not None and e_machine != machine:
        return Defect(path=path, kind="machine", size=size, machine=e_machine, intact=intact)
    if mount is not None:
        return Defect(
            path=path,
            kind="noexec",
            size=size,
            mount=mount,
            option="noexec",
            intact=intact,
        )
    return None
