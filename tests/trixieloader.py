"""Debian trixie's Vulkan loader (libvulkan1 1.4.309) on this Debian 12 machine, the oracle for
the rules that follow the loader's version.

The .debs of trixie's libvulkan1 and libc6 come from the Debian archive through apt with a
private configuration (`debroot.suite_debs`: apt checks them against trixie's signed lists) and
are cached under the test cache. trixie's libvulkan.so.1 needs glibc 2.38, Debian 12 has 2.36,
so every command here runs in a private mount namespace in which trixie's libc6 files are
bind-mounted over the system's (ld.so, libc.so.6, libm.so.6, ... and gconv): inside it the
machine is Debian 12 with trixie's glibc, the system's lavapipe and Python run unchanged, and a
user's copy of trixie's loader sits in a folder on LD_LIBRARY_PATH, where every Vulkan
application (vulkaninfo, vkdoctor's children, the probe) loads it and where vkdoctor's own
ld.so emulation finds it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import debroot

VERSION = (1, 4, 309)
LIBDIR = "usr/lib/x86_64-linux-gnu"

#: bind-mounts each of trixie's glibc files over the system's (mount itself run by trixie's
#: ld.so, so that it never starts half on one glibc and half on the other), then runs the command
_MOUNT = (
    'set -e; ld="$1/ld-linux-x86-64.so.2"; for f in "$1"/*; do t=/usr/lib/x86_64-linux-gnu/${f##*/}; '
    'if [ -e "$t" ]; then "$ld" --library-path "$1" /usr/bin/mount --bind "$f" "$t"; fi; done; '
    'shift; exec "$@"'
)


@dataclass(frozen=True)
class TrixieLoader:
    #: trixie's libc6 files (usr/lib/x86_64-linux-gnu of its .deb)
    glibc: Path
    #: a folder with only libvulkan.so.1 -> libvulkan.so.1.4.309, for LD_LIBRARY_PATH
    loader_dir: Path

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run with trixie's glibc in a mount namespace of its own."""
        return [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            _MOUNT,
            "sh",
            str(self.glibc),
            *argv,
        ]

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with trixie's loader first on LD_LIBRARY_PATH, as a user puts a loader copy."""
        rest = env.get("LD_LIBRARY_PATH")
        return {**env, "LD_LIBRARY_PATH": str(self.loader_dir) + (f":{rest}" if rest else "")}


def trixie_loader() -> TrixieLoader:
    """trixie's loader and glibc, unpacked once into the test cache."""
    vulkan, libc = debroot.suite_debs("trixie", ["libvulkan1", "libc6"])
    key = hashlib.sha256(f"{vulkan.name}\0{libc.name}".encode()).hexdigest()[:16]
    tree = debroot.CACHE / f"trixie-loader-{key}"
    if not tree.is_dir():
        partial = tree.with_name(f"{tree.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        for deb, part in ((vulkan, "vulkan"), (libc, "libc")):
            (partial / part).mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(partial / part)], check=True)
        try:
            partial.rename(tree)
        except OSError:  # another session unpacked it first
            shutil.rmtree(partial, ignore_errors=True)
    found = sorted((tree / "vulkan" / LIBDIR).glob("libvulkan.so.1.*"))
    assert [f.name for f in found] == ["libvulkan.so." + ".".join(map(str, VERSION))], found
    assert (tree / "libc" / LIBDIR / "ld-linux-x86-64.so.2").is_file()
    return TrixieLoader(glibc=tree / "libc" / LIBDIR, loader_dir=tree / "vulkan" / LIBDIR)


def run(
    loader: TrixieLoader | None,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`argv` with `env` under trixie's loader, or under the system's 1.3.239 when `loader` is
    None: the same command, the same variables, only the loader differs."""
    if loader is not None:
        argv, env = loader.command(argv), loader.env(env)
    return subprocess.run(
        list(argv), env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
    )
