"""Build real shared objects for tests (gcc, patchelf) and ask the real dynamic linker about them.

Reusable by any test: `build_lib` makes a .so with a soname, NEEDED entries, DT_RPATH or
DT_RUNPATH and a version script; `patchelf` edits one; `DlopenProbe` is a tiny C program linked
with libvulkan.so.1 (the process model vkdoctor uses) that dlopens a file and prints either
dlerror() verbatim or every loaded object's l_name; `ldso_list` runs `ld.so --list`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

LDSO = "/lib64/ld-linux-x86-64.so.2"
TIMEOUT = 60


def run(
    cmd: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", **(env or {})}
    return subprocess.run(
        list(cmd), capture_output=True, text=True, env=full, timeout=TIMEOUT, check=False, cwd=cwd
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    if proc.returncode != 0:
        raise AssertionError(f"{proc.args} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def build_lib(
    out: Path,
    *,
    soname: str | None = None,
    source: str | None = None,
    link: Sequence[Path] = (),
    rpath: Sequence[str] | None = None,
    runpath: Sequence[str] | None = None,
    version_script: str | None = None,
    m32: bool = False,
    flags: Sequence[str] = (),
) -> Path:
    """gcc -shared. `link` are .so files to link against (each becomes a DT_NEEDED of its soname)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_name(out.name + ".c")
    src.write_text(
        source if source is not None else f"int {_ident(out.name)}(void) {{ return 1; }}\n"
    )
    cmd = ["gcc", "-shared", "-fPIC", "-o", str(out), str(src)]
    if m32:
        cmd += ["-m32"]
    if soname:
        cmd += [f"-Wl,-soname,{soname}"]
    if version_script is not None:
        vs = out.with_name(out.name + ".map")
        vs.write_text(version_script)
        cmd += [f"-Wl,--version-script={vs}"]
    if rpath is not None:
        cmd += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(rpath)]
    if runpath is not None:
        cmd += ["-Wl,--enable-new-dtags", "-Wl,-rpath," + ":".join(runpath)]
    cmd += ["-Wl,--no-as-needed"]
    for lib in link:
        cmd += [f"-L{lib.parent}", f"-l:{lib.name}"]
    cmd += list(flags)
    _ok(run(cmd))
    return out


def _ident(name: str) -> str:
    return "f_" + "".join(c if c.isalnum() else "_" for c in name)


def patchelf(path: Path, *args: str) -> Path:
    _ok(run(["patchelf", *args, str(path)]))
    return path


def copy(src: Path | str, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(Path(src).read_bytes())
    return dst


PROBE_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
static int cb(struct dl_phdr_info *i, size_t s, void *d) { (void)s; (void)d;
  if (i->dlpi_name && i->dlpi_name[0]) printf("LOADED %s\n", i->dlpi_name); return 0; }
int main(int argc, char **argv) {
  for (int k = 1; k < argc; k++) {
    void *h = dlopen(argv[k], RTLD_LAZY | RTLD_LOCAL);
    if (!h) { printf("ERROR %s\n", dlerror()); return 1; }
  }
  dl_iterate_phdr(cb, 0);
  return 0;
}
"""


@dataclass(frozen=True)
class ProbeResult:
    error: str | None
    loaded: tuple[str, ...]


@dataclass(frozen=True)
class DlopenProbe:
    """An executable without RPATH/RUNPATH that links libvulkan.so.1 and dlopens its arguments."""

    exe: Path

    @classmethod
    def build(cls, workdir: Path) -> DlopenProbe:
        workdir.mkdir(parents=True, exist_ok=True)
        src = workdir / "probe.c"
        src.write_text(PROBE_C)
        exe = workdir / "dlopen-probe"
        _ok(
            run(
                ["gcc", "-o", str(exe), str(src), "-Wl,--no-as-needed", "-l:libvulkan.so.1", "-ldl"]
            )
        )
        return cls(exe)

    def load(
        self, *names: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> ProbeResult:
        proc = run([str(self.exe), *names], env=env, cwd=cwd)
        error = None
        loaded = []
        for line in proc.stdout.splitlines():
            if line.startswith("ERROR "):
                error = line[6:]
            elif line.startswith("LOADED "):
                loaded.append(line[7:])
        if error is None and proc.returncode != 0:
            error = f"probe exited {proc.returncode}: {proc.stderr.strip()}"
        return ProbeResult(error=error, loaded=tuple(loaded))


def ldso_list(path: Path | str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`ld.so --list PATH`: soname -> path, as the real dynamic linker resolves it."""
    proc = run([LDSO, "--list", str(path)], env=env)
    out: dict[str, str] = {}
    for raw in proc.stdout.splitlines():
        line = raw.strip()
        if "=>" in line:
            name, _, rest = line.partition("=>")
            out[name.strip()] = rest.rsplit("(", 1)[0].strip()
    if proc.returncode != 0:
        out["<error>"] = proc.stderr.strip()
    return out
