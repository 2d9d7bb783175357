"""The library family of a soname or file name: its name without the version, however spelled.

The version starts at ".so" or at a "-" followed by a digit, and runs to the end of the name,
numeric or not: libLLVM.so.23.1, libLLVM-15.so.1, libLLVM-17git.so, libLLVM-15-custom.so.1 and
libLLVM.so.18.1-rust-1.78.0-stable (the rustc toolchain's LLVM) are all the family libLLVM.
What goes on without such a break is another library: libLLVMSPIRVLib, libzstd (not libz),
libvulkan_lvp (not libvulkan), libxcb-dri3 (not libxcb).
"""

from __future__ import annotations

import posixpath
import re
import shlex

_FAMILY = re.compile(r"^(?P<stem>.+?)(?:-[0-9][^/]*?)?\.so(?:[.-].*)?$")


def family(name: str) -> str | None:
    """The family of a library name or path; None when it is not named like a shared object."""
    m = _FAMILY.match(posixpath.basename(name))
    return m.group("stem") if m else None


_MAJOR = re.compile(r"\.so\.([0-9]+)|-([0-9]+)")


def find_remedy(name: str, command: str = "vkdoctor check") -> str:
    """How to find a copy of the missing library `name` on this machine and hand its folder to
    vkdoctor: a first run does not know where a private build keeps it. The search is for the
    family at the major version needed, however the build spelt it (libLLVM.so.23.1,
    libLLVM-23.so, libLLVM-23git.so), and leaves out vkdoctor's own overlays."""
    stem = family(name) or name.split(".so", 1)[0]
    m = _MAJOR.search(name[len(stem) :])
    glob = f"{stem}*{m.group(1) or m.group(2)}*" if m else f"{stem}*.so*"
    return (
        f"`find / -name {shlex.quote(glob)} -not -path '*/vkdoctor/overlays/*' 2>/dev/null`, then "
        f"`{command} --search-path DIR` with the folder that holds {name} (vkdoctor checks the "
        "copy before it uses it)."
    )
