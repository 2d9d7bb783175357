"""How the loader turns manifest fields into values: versions, library paths, library files."""

from __future__ import annotations

import re

from vkdoctor.loader.rootpath import host_path
from vkdoctor.model.context import Context
from vkdoctor.model.digits import saturated
from vkdoctor.model.record import record

_ATOI = re.compile(rb"^[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _atoi16(token: bytes) -> int:
    m = _ATOI.match(token)
    if not m:
        return 0
    text = m[1].decode()
    # atoi is (int)strtol: saturated at the long's range, then cut to an int
    magnitude = saturated(text.lstrip("+-"), 2**63 - (text[0] != "-"))
    value = -magnitude if text[0] == "-" else magnitude
    value = ((value + 2**31) % 2**32) - 2**31  # C int
    return value & 0xFFFF  # (uint16_t)


def parse_version(printed: bytes) -> int:
    """loader_parse_version_string on the cJSON_Print text: 3 parts, or 4 with a variant first."""
    tokens = [t for t in re.split(rb'[."\n\r]', printed) if t]
    parts = [_atoi16(t) for t in tokens[:4]]
    variant = 0
    if len(parts) == 4:
        variant, major, minor, patch = parts
    else:
        parts += [0] * (3 - len(parts))
        major, minor, patch = parts[:3]
    return ((variant << 29) | (major << 22) | (minor << 12) | patch) & 0xFFFFFFFF


def variant_of(v: int) -> int:
    return v >> 29


def version_text(v: int) -> str:
    """major.minor.patch as the loader extracts them (loader_make_full_version)."""
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def version_triple(v: int) -> tuple[int, int, int]:
    return ((v >> 22) & 0x7F, (v >> 12) & 0x3FF, v & 0xFFF)


def posix_dirname(path: str) -> str:
    """dirname(3) as glibc implements it."""
    stripped = path.rstrip("/")
    if not stripped:
        return "/" if path else "."
    if "/" not in stripped:
        return "."
    head = stripped.rsplit("/", 1)[0].rstrip("/")
    return head or "/"


def resolve_library(manifest: str, library_path: str) -> tuple[str, str]:
    """(what dlopen gets, which rule): absolute, relative to the manifest's directory, or bare name."""
    if "/" in library_path:
        if library_path.startswith("/"):
            return library_path, "absolute"
        return posix_dirname(manifest) + "/" + library_path, "relative"
    return library_path, "bare"


def process_bits(machine: str) -> int:
    return 32 if machine in ("i386", "i486", "i586", "i686", "armv7l", "armv6l", "arm") else 64


_ELF_MACHINE = {"x86_64": 62, "i386": 3, "i686": 3, "aarch64": 183, "armv7l": 40}


@record(frozen=True)
class LibraryFile:
    """What a library path holds, as far as dlopen's first checks go."""

    #: "ok", "missing", "not-elf", "wrong-class", "wrong-machine", "unreadable", "directory"
    state: str
    detail: str = ""
    elf_class: int | None = None


def inspect_library(ctx: Context, path: str) -> LibraryFile:
    """Existence, ELF magic, class and machine of `path` (a loader path, mapped through ctx.under)."""
    host = host_path(ctx, path)
    try:
        if host.is_dir():
            return LibraryFile("directory", "is a directory")
        with open(host, "rb") as f:
            head = f.read(20)
    except FileNotFoundError:
        detail = "dangling symbolic link" if host.is_symlink() else "No such file or directory"
        return LibraryFile("missing", detail)
    except OSError as exc:
        return LibraryFile("unreadable", exc.strerror or str(exc))
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return LibraryFile("not-elf", "invalid ELF header" if len(head) >= 4 else "file too short")
    elf_class = 32 if head[4] == 1 else 64
    if elf_class != process_bits(ctx.machine):
        return LibraryFile("wrong-class", f"wrong ELF class: ELFCLASS{elf_class}", elf_class)
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    want = _ELF_MACHINE.get(ctx.machine)
    if want is not None and machine != want:
        return LibraryFile("wrong-machine", f"ELF machine {machine}, expected {want}", elf_class)
    return LibraryFile("ok", "", elf_class)
