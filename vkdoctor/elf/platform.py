"""What ld.so on this host adds to every search: system directories, hwcaps subdirectories, $LIB.

glibc 2.36 (Debian 12) searches, in each directory: glibc-hwcaps/<level> for every x86-64 ISA level
the CPU supports (v4 first), then the legacy hwcaps subdirectories (tls, the AT_PLATFORM name,
avx512_1, x86_64, in all combinations), then the directory itself. Its system directories are
compiled into ld.so; we read them from the root's ld.so binary (`ld.so --help` prints the same
list), so a Fedora (/lib64) or Arch (/usr/lib) root is modelled as it is.
"""

from __future__ import annotations

import os
import re

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.factstore import FactKind
from vkdoctor.model.record import record

#: the program interpreter per `uname -m`
INTERPRETERS = {
    "x86_64": "/lib64/ld-linux-x86-64.so.2",
    "aarch64": "/lib/ld-linux-aarch64.so.1",
    "i686": "/lib/ld-linux.so.2",
    "i386": "/lib/ld-linux.so.2",
    "ppc64le": "/lib64/ld64.so.2",
    "s390x": "/lib/ld64.so.1",
    "riscv64": "/lib/ld-linux-riscv64-lp64d.so.1",
}
TRIPLETS = {
    "x86_64": "x86_64-linux-gnu",
    "aarch64": "aarch64-linux-gnu",
    "i686": "i386-linux-gnu",
    "i386": "i386-linux-gnu",
    "ppc64le": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
    "riscv64": "riscv64-linux-gnu",
}
#: e_machine and class of the process we model, per `uname -m`
MACHINES = {
    "x86_64": ("EM_X86_64", 64),
    "aarch64": ("EM_AARCH64", 64),
    "i686": ("EM_386", 32),
    "i386": ("EM_386", 32),
    "ppc64le": ("EM_PPC64", 64),
    "s390x": ("EM_S390", 64),
    "riscv64": ("EM_RISCV", 64),
}

#: x86-64 ISA levels (glibc sysdeps/x86/get-isa-level.h), in /proc/cpuinfo flag names
X86_LEVELS = (
    ("x86-64-v2", frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"})),
    ("x86-64-v3", frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"})),
    ("x86-64-v4", frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})),
)
#: the features glibc's init_cpu_features asks of an Intel CPU before it names the platform "haswell"
#: (LZCNT is /proc/cpuinfo's "abm")
HASWELL = frozenset({"avx2", "fma", "bmi1", "bmi2", "abm", "movbe", "popcnt"})

_SYSDIRS = re.compile(rb"(?:/[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/\x00){2,}")


@record(frozen=True, kw_only=True)
class LdsoPlatform:
    machine: str
    e_machine: str
    elf_class: int
    interpreter: str
    #: ld.so's built-in directories, in order
    system_dirs: tuple[str, ...]
    #: where system_dirs came from: "ld.so" (read from the binary) or "assumed"
    system_dirs_source: str
    #: glibc-hwcaps subdirectories searched, highest priority first
    hwcaps: tuple[str, ...]
    #: legacy hwcap subdirectories (without the directory itself), in search order
    legacy_subdirs: tuple[str, ...]
    #: $PLATFORM
    platform: str
    #: $LIB
    lib: str

    def subdirs(self) -> tuple[str, ...]:
        """Relative subdirectories tried in each search directory, before the directory itself."""
        return tuple(f"glibc-hwcaps/{h}" for h in self.hwcaps) + self.legacy_subdirs


def _cpu_flags(ctx: Context) -> tuple[set[str], str]:
    try:
        text = tree.read_text(ctx, "/proc/cpuinfo")
    except OSError:
        return set(), ""
    flags: set[str] = set()
    vendor = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "flags" and not flags:
            flags = set(value.split())
        elif key == "vendor_id" and not vendor:
            vendor = value.strip()
    return flags, vendor


def _system_dirs(ctx: Context, interpreter: str, machine: str) -> tuple[tuple[str, ...], str]:
    found = _compiled_in_dirs(ctx, interpreter)
    if found:
        return found, "ld.so"
    triplet = TRIPLETS.get(machine)
    if triplet and ctx.under(f"/usr/lib/{triplet}").is_dir():
        return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib"), "assumed"
    if MACHINES.get(machine, ("", 64))[1] == 64 and ctx.under("/usr/lib64").is_dir():
        return ("/lib64", "/usr/lib64"), "assumed"
    return ("/lib", "/usr/lib"), "assumed"


def _compiled_in_dirs(ctx: Context, interpreter: str) -> tuple[str, ...]:
    """The system directories compiled into ld.so (its SYSTEM_DIRS string), () when not found;
    kept across runs (`ctx.store`) while the interpreter is the same file."""
    host = ctx.under(interpreter)
    kept = ctx.store.get(_KIND, (host,))
    if isinstance(kept, tuple) and all(isinstance(d, str) for d in kept):
        return kept
    try:
        with open(host, "rb") as f:
            # read(n) allocates n bytes first: the file's size, at most 8 MiB
            data = f.read(min(os.fstat(f.fileno()).st_size, 8 * 1024 * 1024))
    except OSError:
        return ()
    m = _first_run(data)
    dirs = tuple(s.decode().rstrip("/") or "/" for s in m.group().split(b"\x00") if s) if m else ()
    ctx.store.put(_KIND, (host,), (), dirs)
    return dirs


_KIND = FactKind("ldso-dirs", (__file__,))


def _first_run(data: bytes) -> re.Match[bytes] | None:
    """`_SYSDIRS.search(data)`, without trying the pattern at every slash of the file (~7 ms
    over ld.so's 200 kB). A match has two directories or more, so the first directory's
    "/\0" is followed by "/": the string that holds the first such "/\0/" is where the
    leftmost match starts at the earliest (one that started before it would hold an earlier
    "/\0/")."""
    at = data.find(b"/\x00/")
    if at < 0:
        return None
    return _SYSDIRS.search(data, data.rfind(b"\x00", 0, at) + 1)


def _legacy(flags: set[str], vendor: str, machine: str) -> tuple[tuple[str, ...], str]:
    """glibc 2.36's legacy hwcaps subdirectories (elf/dl-hwcaps.c, _dl_important_hwcaps) and
    $PLATFORM.

    On x86_64 the hwcap bits that count are HWCAP_X86_64 (always) and HWCAP_X86_AVX512_1, which
    sysdeps/x86/cpu-features.c sets only on Intel CPUs with AVX512F/CD/BW/DQ/VL and without
    AVX512ER. The platform is the kernel's AT_PLATFORM ("x86_64") unless an Intel CPU earns
    "xeon_phi" or "haswell". The names, in the order hwcap bits, platform, "tls", form every
    subset from the full set down to the empty one (the directory itself, left out here), each
    written with the last name first: on an AMD CPU that is tls/x86_64/x86_64, tls/x86_64 twice,
    tls, x86_64/x86_64, x86_64 twice. ld.so tries the repeated ones twice; so do we.
    """
    if machine != "x86_64":
        return ("tls",), machine
    names = ["x86_64"]
    platform = "x86_64"
    if vendor == "GenuineIntel":
        chosen = ""
        if "avx512cd" in flags:
            if "avx512er" in flags:
                if "avx512pf" in flags:
                    chosen = "xeon_phi"
            elif {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
                names.append("avx512_1")
        if not chosen and flags >= HASWELL:
            chosen = "haswell"
        platform = chosen or platform
    names += [platform, "tls"]
    subsets = []
    for mask in range(2 ** len(names) - 1, 0, -1):
        subsets.append("/".join(n for i, n in reversed(list(enumerate(names))) if mask >> i & 1))
    return tuple(subsets), platform


def tree_machine(ctx: Context) -> str:
    """The machine a --root tree is built for: the one whose ld.so it has (an aarch64 image
    inspected from an x86_64 host is judged as aarch64). The host's own machine when the tree
    has its interpreter too (an x86_64 tree with i386 multiarch). With no interpreter at all,
    the tree's own programs (/usr/bin/env, /bin/sh) say it."""
    present = [m for m, interpreter in INTERPRETERS.items() if ctx.resolve(interpreter).is_file()]
    if ctx.machine in present:
        return ctx.machine
    if present:
        return min(present, key=lambda m: MACHINES[m][1] != 64)
    return _machine_of_programs(ctx) or ctx.machine


def _machine_of_programs(ctx: Context) -> str | None:
    from vkdoctor.elf.reader import ElfInfo, read_elf

    by_name = {em: m for m, (em, _) in reversed(MACHINES.items())}
    for program in ("/usr/bin/env", "/bin/sh", "/usr/bin/ls"):
        info = read_elf(ctx, program)
        if isinstance(info, ElfInfo) and info.machine in by_name:
            return by_name[info.machine]
    return None


def ldso_platform(ctx: Context) -> LdsoPlatform:
    """The Context-level fact: use as `ctx.fact(ldso_platform)`."""
    machine = ctx.machine
    e_machine, elf_class = MACHINES.get(machine, ("EM_X86_64", 64))
    interpreter = INTERPRETERS.get(machine, "/lib64/ld-linux-x86-64.so.2")
    system_dirs, source = _system_dirs(ctx, interpreter, machine)
    flags, vendor = _cpu_flags(ctx)
    hwcaps: list[str] = []
    if machine == "x86_64" and flags:
        have = set(flags)
        if "pni" in have:
            have.add("sse3")
        for name, need in X86_LEVELS:
            if need <= have:
                hwcaps.append(name)
            else:
                break
    legacy, platform = _legacy(flags, vendor, machine)
    lib = system_dirs[0].lstrip("/")
    if lib.startswith("usr/"):
        lib = lib[4:]
    return LdsoPlatform(
        machine=machine,
        e_machine=e_machine,
        elf_class=elf_class,
        interpreter=interpreter,
        system_dirs=system_dirs,
        system_dirs_source=source,
        hwcaps=tuple(reversed(hwcaps)),
        legacy_subdirs=legacy,
        platform=platform,
        lib=lib,
    )
