"""The typed parts of the report (report.schema.json): the host, the drivers list, the overlay,
the loader's driver search and the probe's result. Their JSON is `record.to_json` of them: the keys are the fields, in order;
a field holding `ABSENT` is left out (a key the schema makes optional, which is not null)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vkdoctor.model.record import ABSENT, Absent, field, record

if TYPE_CHECKING:
    from vkdoctor.model.probe_records import ProbeDetails


@record(frozen=True, kw_only=True)
class DriverLibrary:
    """One object ld.so maps when the loader dlopens a driver's library."""

    #: the name it was asked for: a DT_NEEDED soname, or the dlopen path
    name: str
    path: str
    #: how ld.so found it (elf.search.How's value)
    how: str
    needed_by: str | None
    #: the package that owns `path`, as VKP009 found it (absent when VKP009 did not run)
    package: str | Absent | None = ABSENT


@record(frozen=True, kw_only=True)
class DriverMiss:
    """A name ld.so cannot find for a driver's library (the library itself: needed_by None)."""

    name: str
    needed_by: str | None


@record(frozen=True, kw_only=True)
class DriverLoad:
    """What the real load test saw for one driver manifest."""

    dlopen: str
    dlerror: str | None
    instance: str
    vk_result: str | None
    devices: tuple[Mapping[str, Any], ...]
    signal: str | None


@record(frozen=True, kw_only=True)
class DriverRow:
    """One manifest the loader lists, in its order, with the verdict on it (report.drivers[])."""

    index: int
    manifest: str
    origin: str
    search_entry: str
    library_path: str | None
    library: str | None
    library_rule: str | None
    dlopen_name: str | None
    api_version: str | None
    file_format_version: str | None
    library_arch: str | None
    is_portability_driver: bool
    #: the known driver the library is (lavapipe, ...)
    driver: str | None
    outcome: str
    predicted_error: str | None
    #: a Severity's value
    verdict: str
    reason: str | None
    #: absent when the loader skips the manifest
    libraries: tuple[DriverLibrary, ...] | Absent = ABSENT
    missing: tuple[DriverMiss, ...] | Absent = ABSENT
    #: absent when the load test did not run
    load: DriverLoad | Absent = ABSENT
    #: absent when VKP009 did not run (or the loader skips the manifest)
    package: str | Absent | None = ABSENT


@record(frozen=True, kw_only=True)
class OverlayLink:
    soname: str
    target: str
    needed_by: tuple[str, ...]


@record(frozen=True, kw_only=True)
class OverlayReport:
    """The overlay that was built (report.overlay)."""

    dir: str
    ld_library_path: str
    libraries: tuple[OverlayLink, ...]
    #: whether the report's checks ran under it
    applied: bool
    #: the command that runs a program under it
    exec: str


@record(frozen=True, kw_only=True)
class SearchPathEntry:
    """A place the loader looks for driver manifests, and where the entry comes from."""

    path: str
    origin: str


@record(frozen=True, kw_only=True)
class ImplicitLayer:
    """A layer the loader adds to every application: an implicit one, or an explicit one the
    environment turns on (VK_INSTANCE_LAYERS, VK_LOADER_LAYERS_ENABLE)."""

    name: str | None
    #: the file the loader opens (as found, else as the manifest names it)
    library: str | None
    #: the variable that turns it off, when it has one
    disable_env: str | None
    #: what the library file is: "ok", or why the loader cannot open it and goes on without
    #: the layer (LAYER_LIBRARY_PROBLEMS); None for a meta layer, which has no library
    library_state: str | None = None
    #: the manifest that declares it, and the Vulkan version it declares
    manifest: str | None = None
    api_version: str | None = None


#: an implicit layer's library_state other than "ok": why the loader goes on without the layer
LAYER_LIBRARY_PROBLEMS = {
    "missing": "does not exist",
    "directory": "is a directory",
    "unreadable": "cannot be read",
    "not-elf": "is not an ELF library",
    "wrong-class": "is of the other ELF class (32/64-bit)",
    "wrong-machine": "is built for another CPU",
    "no-entry-point": "exports no layer entry point",
    "unknown": "is not found where the dynamic linker looks",
}


@record(frozen=True, kw_only=True)
class DriverSearch:
    """How the loader finds drivers (report.driver_search): its version, the search path, the
    variable that replaced it, and the implicit layers it adds."""

    #: the loader's version as text ("1.3.239", "unknown")
    loader_version: str
    #: libvulkan.so.1 inside the root, null when there is none
    loader_path: str | None
    #: the variable that replaced the default search path (VK_DRIVER_FILES, ...)
    override: str | None
    entries: tuple[SearchPathEntry, ...]
    implicit_layers: tuple[ImplicitLayer, ...]
    #: the explicit layers the environment puts into every application
    explicit_layers: tuple[ImplicitLayer, ...] = ()


#: the probe's statuses (the parent makes any other an "error")
PROBE_STATUSES = ("pass", "fail", "crash", "timeout", "no-adapter", "error")


@record(frozen=True, kw_only=True)
class ProbeResult:
    """The probe's result (report.probe): what the report's status and the verdicts decide on,
    typed, the details the renderers show (vkdoctor.model.probe_records), and the whole object as the
    probe child and vkdoctor wrote it."""

    #: one of PROBE_STATUSES
    status: str
    #: finer than status (wrong-numbers, signal, timeout, ...)
    reason: str | None
    #: one line on what happened
    summary: str | None
    backend: str | None
    #: how long the probe took, the child's start to its end
    seconds: float | None
    #: the report's `probe` object, every key in the order it was written
    document: Mapping[str, Any] = field(repr=False)
    #: the adapters, ladder, cases and the rest the renderers show, read from `document`
    details: ProbeDetails = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        # not to_json(self): the child's document passes through whole and in its order (the
        # schema leaves its details open); the fields above are read from it
        return dict(self.document)


def probe_result_of(document: Mapping[str, Any]) -> ProbeResult:
    """The typed result of the probe's `document` (vkdoctor.children.probe's object)."""
    from vkdoctor.model.probe_records import details_of

    def text(key: str) -> str | None:
        value = document.get(key)
        return None if value is None else str(value)

    seconds = document.get("seconds")
    status = str(document.get("status"))
    return ProbeResult(
        status=status if status in PROBE_STATUSES else "error",
        reason=text("reason"),
        summary=text("summary"),
        backend=text("backend"),
        seconds=float(seconds) if isinstance(seconds, int | float) else None,
        document=document,
        details=details_of(document),
    )


@record(frozen=True, kw_only=True)
class Distro:
    """The root's /etc/os-release: ID, PRETTY_NAME (else NAME), VERSION_ID and ID_LIKE."""

    id: str | None
    name: str | None
    version: str | None
    like: str | None


@record(frozen=True, kw_only=True)
class HostLoader:
    """The root's Vulkan loader (libvulkan.so.1): path None when there is none."""

    path: str | None
    version: str | None


@record(frozen=True, kw_only=True)
class HostCpu:
    model: str | None
    count: int | None


@record(frozen=True, kw_only=True)
class HostMemory:
    """MemTotal and MemAvailable, in bytes."""

    total_bytes: int | None
    available_bytes: int | None


@record(frozen=True, kw_only=True)
class HostReport:
    """The inspected machine, or the --root tree (report.host of `check` and `drivers`): there
    what only a running system has (python, wgpu, kernel, cpu, memory) is None."""

    root: str
    distro: Distro
    machine: str
    loader: HostLoader | None
    vkdoctor: str
    python: str | None
    python_executable: str | None
    wgpu: str | None
    kernel: str | None
    cpu: HostCpu | None
    memory: HostMemory | None
    #: the variables that decide which driver loads and how, sorted by name
    environment: Mapping[str, str]
    #: True in a report written with --redact
    redacted: bool | Absent = ABSENT


@record(frozen=True, kw_only=True)
class ProbeHost:
    """The host facts `run-probe` reports next to a probe result (report.host), in its order:
    without `check`'s loader, package and environment queries."""

    root: str
    distro: Distro
    kernel: str | None
    machine: str
    python: str | None
    python_executable: str | None
    vkdoctor: str
    #: the wgpu the probe child imported
    wgpu: str | None
    redacted: bool | Absent = ABSENT
