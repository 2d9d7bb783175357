"""The contract between the loader emulation and everything that loads libraries.

`load_targets(ctx)` (implemented in vkdoctor.loader) lists, in the loader's order, every library the
Khronos loader will dlopen for a vkCreateInstance in this environment: the drivers that survive
discovery, manifest validation and the select/disable filters, and the active implicit layers.
The library-resolution checks, the real load test, the package rules and the overlay consume it.
"""

from __future__ import annotations

from typing import Literal

from vkdoctor.model import Remedy
from vkdoctor.model.record import record


@record(frozen=True, kw_only=True)
class LoadTarget:
    """A library the loader will dlopen: a driver (ICD) or an active implicit layer."""

    kind: Literal["driver", "layer"]
    #: manifest file name for a driver (lvp_icd.x86_64.json), layer name for a layer
    name: str
    #: the manifest's path as the loader lists it
    manifest: str
    #: exactly what the loader passes to dlopen: an absolute path, or a bare name that ld.so searches
    dlopen_name: str
    #: the manifest's library_arch ("32"/"64") when it has one
    library_arch: str | None = None
    #: for a layer: how to keep it out of every instance in this environment (Layer.fix)
    off_fix: Remedy | None = None

    @property
    def off(self) -> str | None:
        """`off_fix` as a sentence quotes it."""
        return self.off_fix.shown() if self.off_fix else None
