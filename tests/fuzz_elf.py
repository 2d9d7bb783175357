"""Fuzz targets for the readers of what ld.so reads: ELF files (vkdoctor.elf.reader, the version
nodes, vkdoctor.elf.dynsym), /etc/ld.so.cache and ld.so.conf trees (vkdoctor.elf.ldcache).

Seeds are real inputs: shared objects glibc installs on every Debian 12 system, synthetic files
of the other classes and byte orders (tests/elfwriter.py), this machine's /etc/ld.so.cache, and
its ld.so.conf tree (packed with `pack_tree`, beside trees that include one another). None of
these readers may raise for bad input: `expected` is empty.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from elfwriter import EM_PPC, EM_S390, Spec, write
from fuzzing import FuzzTarget

from vkdoctor.elf.dynsym import SymbolName, read_symbol_table
from vkdoctor.elf.explain import highest_per_family, version_node_key
from vkdoctor.elf.ldcache import load_conf, parse_cache
from vkdoctor.elf.reader import ElfInfo, _parse
from vkdoctor.elf.resolve import version_key
from vkdoctor.model.context import Context

SYSLIB = Path("/usr/lib/x86_64-linux-gnu")
#: small objects of libc6 with version needs and definitions (14 KB each)
REAL_ELF = ("libdl.so.2", "libanl.so.1", "libutil.so.1", "libBrokenLocale.so.1")


def elf_seeds() -> Sequence[bytes]:
    real = [(SYSLIB / name).read_bytes() for name in REAL_ELF]
    versions = [("libc.so.6", [("GLIBC_2.2.5", False), ("GLIBC_2.34", True)])]
    synthetic = [
        write(
            Spec(
                is64=is64,
                little=little,
                machine=machine,
                needed=("libc.so.6", "libm.so.6"),
                runpath="$ORIGIN/../lib:/opt/x",
                verneed=versions,
                verdef=("LIBW_1.0", "LIBW_1.1"),
                symbols=(("w_open", "global"), ("w_weak", "weak"), ("malloc", "undef")),
            )
        )
        for is64, little, machine in (
            (True, False, EM_S390),
            (False, False, EM_PPC),
            (False, True, 3),
        )
    ]
    return [*real, *synthetic]


def run_elf(data: bytes, scratch: str) -> object:
    path = Path(scratch) / "lib.so"
    path.write_bytes(data)
    info = _parse(path, str(path))
    if isinstance(info, ElfInfo):
        # the version node keys order any name (5,000 digits, superscripts)
        names = [v for need in info.verneed for v in need.versions] + list(info.verdef)
        highest_per_family(names)
        sorted(names, key=version_key)
        sorted(names, key=version_node_key)
        info.as_dict()
    return info


def run_dynsym(data: bytes, scratch: str) -> object:
    path = Path(scratch) / "lib.so"
    path.write_bytes(data)
    table = read_symbol_table(path)
    for name in ("malloc", "w_open", "dlopen", "pthread_create"):
        table.defines(SymbolName(name))
    return table


def cache_seeds() -> Sequence[bytes]:
    return [Path("/etc/ld.so.cache").read_bytes()]


def run_cache(data: bytes, scratch: str) -> object:
    cache = parse_cache(data)
    for name in ("libc.so.6", "libvulkan.so.1", "libLLVM-15.so.1"):
        cache.lookup(name, "x86_64", ("x86-64-v3", "x86-64-v2"))
    return cache


#: separates the files of a packed ld.so.conf tree: MARK, the path under /etc, a newline
MARK = b"\n@@@ "
_SAFE = re.compile(r"^[A-Za-z0-9._-]{1,64}(/[A-Za-z0-9._-]{1,64})?$")


def pack_tree(files: dict[str, bytes]) -> bytes:
    """{"ld.so.conf": text, "ld.so.conf.d/x.conf": text} as one input."""
    return b"".join(MARK + name.encode() + b"\n" + body for name, body in files.items())


def unpack_tree(data: bytes, etc: Path) -> None:
    """Write the files of a packed tree under `etc` (names outside /etc, odd names, or more than
    64 files are dropped: the target fuzzes the reader, not the file system)."""
    for part in data.split(MARK)[1:65]:
        name, _, body = part.partition(b"\n")
        text = name.decode("ascii", "replace")
        if not _SAFE.match(text) or ".." in text:
            continue
        path = etc / text
        try:
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(body)
        except OSError:  # "a" a file and "a/b" wanted, or the other way round
            continue


def conf_seeds() -> Sequence[bytes]:
    real = {"ld.so.conf": Path("/etc/ld.so.conf").read_bytes()}
    for conf in sorted(Path("/etc/ld.so.conf.d").glob("*.conf")):
        real[f"ld.so.conf.d/{conf.name}"] = conf.read_bytes()
    loop = {"ld.so.conf": b"include ld.so.conf.d/*.conf\n/usr/local/lib\n"}
    for i in range(8):
        loop[f"ld.so.conf.d/{i}.conf"] = (
            f"# {i}\n/opt/l{i}\ninclude /etc/ld.so.conf.d/*.conf\ninclude ../etc/ld.so.conf\n"
        ).encode()
    odd = {
        "ld.so.conf": b"include\tconf.d/*.conf other/*\nhwcap 1 x\n/a,/b=libc6 /c/\n# x\n",
        "conf.d/a.conf": b"include /etc/conf.d/b.conf\n/lib/a\n",
        "conf.d/b.conf": b"include /etc/conf.d/a.conf\n/lib/b\n",
    }
    return [pack_tree(real), pack_tree(loop), pack_tree(odd)]


def run_conf(data: bytes, scratch: str) -> object:
    root = Path(scratch) / "root"
    etc = root / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    for old in sorted(etc.rglob("*"), key=lambda p: -len(p.parts)):
        old.rmdir() if old.is_dir() and not old.is_symlink() else old.unlink()
    unpack_tree(data, etc)
    return load_conf(Context(root=root))


TARGETS: list[FuzzTarget] = [
    FuzzTarget(name="elf-reader", seeds=elf_seeds, run=run_elf),
    FuzzTarget(name="elf-dynsym", seeds=elf_seeds, run=run_dynsym),
    FuzzTarget(name="ldso-cache", seeds=cache_seeds, run=run_cache),
    FuzzTarget(name="ldso-conf", seeds=conf_seeds, run=run_conf, seconds_floor=1.0),
]
