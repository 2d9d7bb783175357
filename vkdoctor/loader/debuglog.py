"""Parse the loader's own account of a scan (VK_LOADER_DEBUG=error,warn,info,driver,layer on stderr).

Used by the tests that hold vkdoctor's prediction against the real libvulkan.so.1, and usable on
a log a user pastes. Only the first driver block and the first layer block (the implicit layers)
are read: the loader repeats the scan for every instance. Accepts loader 1.3.239's 18-column
layout and newer loaders' "[Vulkan Loader] " prefix.
"""

from __future__ import annotations

import re

from vkdoctor.model.record import field, record

_LINE = re.compile(r"^(?:\[Vulkan Loader\] )?([A-Z]+(?: \| [A-Z]+)*):(\s*)(.*)$")

# outcome names shared with vkdoctor.loader.icd where they mean the same thing
NO_MESSAGE = (
    "no-message"  # "Searching for ICD drivers named" and nothing after: loaded, or portability
)
SILENT = "silent"  # listed, never a line about it (empty file, directory, not reached)
LOAD_FAILED = "load-failed"
NOT_A_DRIVER = "not-a-driver"


@record
class DriverBlock:
    locations: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: manifest -> outcome
    outcomes: dict[str, str] = field(default_factory=dict)
    #: manifest -> library_path exactly as printed by "Searching for ICD drivers named"
    library_paths: dict[str, str] = field(default_factory=dict)
    #: manifest -> file_format_version as printed (with quotes)
    versions: dict[str, str] = field(default_factory=dict)
    #: the manifest whose JSON error aborted the scan
    aborted_by: str | None = None
    portability_skipped: bool = False
    no_drivers: bool = False
    seen: bool = False


@record
class LayerBlock:
    locations: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: layer name -> library, for every "Insert instance layer"
    inserted: dict[str, str] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    json_errors: list[str] = field(default_factory=list)
    seen: bool = False


@record
class LoaderLog:
    drivers: DriverBlock
    layers: LayerBlock
    version: str | None = None


def _messages(text: str) -> list[tuple[str, str]]:
    """(tags, message with the listing indent kept relative to the column) per loader line."""
    out = []
    column = None
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        tags, msg = m.group(1), m.group(3)
        start = m.start(3)
        if column is None and msg.startswith("Searching for"):
            column = start
        extra = start - column if column is not None and start > column else 0
        out.append((tags, " " * extra + msg))
    return out


_DRIVER_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Failed to open JSON file (.+?)\s*$"), "open-failed"),
    (re.compile(r"Failed to parse JSON file (.+?), this is usually"), "json-error"),
    (re.compile(r"Invalid JSON file (.+?)\.?\s*$"), "json-error"),
    (re.compile(r"ICD JSON (.+?) does not have a 'file_format_version'"), "no-file-format-version"),
    (re.compile(r"Can not find 'ICD' object in ICD JSON file (.+?)\. Skipping"), "no-icd-object"),
    (
        re.compile(r"Failed to find 'library_path' object in ICD JSON file (.+?)\. Skipping"),
        "no-library-path",
    ),
    (re.compile(r"ICD JSON (.+?) 'library_path' field is empty"), "empty-library-path"),
    (re.compile(r"ICD JSON (.+?) does not have an 'api_version'"), "no-api-version"),
    (
        re.compile(r"ICD JSON (.+?) 'api_version' field contains a non-zero variant"),
        "api-version-variant",
    ),
)
_CURRENT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Driver library architecture doesn't match"), "library-arch-mismatch"),
    (re.compile(r'Driver ".+" ignored because it was disabled'), "filtered-disable"),
    (re.compile(r'Driver ".+" ignored because not selected'), "filtered-select"),
    (re.compile(r"Failed loading library associated with ICD JSON"), LOAD_FAILED),
    (re.compile(r"Requested (?:layer|ICD) .+ was wrong bit-type"), "wrong-elf-class"),
    (re.compile(r"^loader_scanned_icd_add: "), NOT_A_DRIVER),
)


#: the first starts the layer block (1.3.239 says the same for implicit and explicit layers)
_LAYER_SEARCH = (
    "Searching for layer manifest files",
    "Searching for implicit layer manifest files",
    "Searching for explicit layer manifest files",
)


def parse(stderr: str) -> LoaderLog:
    drivers = DriverBlock()
    layers = LayerBlock()
    version = None
    state = ""  # "", "dlocs", "dfiles", "dbody", "llocs", "lfiles", "lbody", "done"
    current: str | None = None
    driver_done = False
    for tags, msg in _messages(stderr):
        stripped = msg.strip()
        vm = re.match(r"Vulkan Loader Version (\S+)", stripped)
        if vm and version is None:
            version = vm.group(1)
        if stripped == "Searching for driver manifest files":
            if driver_done or drivers.seen:
                driver_done = True
                state = "" if state.startswith("d") else state
                continue
            drivers.seen = True
            state = "dhead"
            continue
        if stripped in _LAYER_SEARCH:
            if layers.seen:
                if state.startswith("l"):
                    state = ""
                continue
            layers.seen = True
            state = "lhead"
            continue
        if state in ("dhead", "lhead") and stripped == "In following locations:":
            state = state[0] + "locs"
            continue
        if state in ("dlocs", "lhead", "dhead", "llocs") and stripped.startswith("Found "):
            if stripped == "Found the following files:":
                state = state[0] + "files"
                continue
            if stripped == "Found no files":
                state = state[0] + "body"
                continue
        listing = msg.startswith("      ") and tags in ("DRIVER", "LAYER")
        if state == "dlocs" and listing:
            drivers.locations.append(stripped)
            continue
        if state == "llocs" and listing:
            layers.locations.append(stripped)
            continue
        if state == "dfiles" and listing:
            drivers.files.append(stripped)
            continue
        if state == "lfiles" and listing:
            layers.files.append(stripped)
            continue
        if state in ("dlocs", "dfiles"):
            state = "dbody"
            for f in drivers.files:
                drivers.outcomes.setdefault(f, SILENT)
        if state in ("llocs", "lfiles"):
            state = "lbody"
        if "Found no drivers!" in stripped:
            drivers.no_drivers = True
        if not driver_done and drivers.seen:
            current = _driver_line(drivers, stripped, current)
            if drivers.aborted_by is not None:
                driver_done = True
        _layer_line(layers, stripped, in_layer_scan=layers.seen and not drivers.seen)
    for f in drivers.files:
        drivers.outcomes.setdefault(f, SILENT)
    return LoaderLog(drivers=drivers, layers=layers, version=version)


def _driver_line(block: DriverBlock, msg: str, current: str | None) -> str | None:
    m = re.match(r'Found ICD manifest file (.+), version (".*"|\S+)$', msg)
    if m:
        current = m.group(1)
        block.outcomes[current] = NO_MESSAGE
        block.versions[current] = m.group(2)
        return current
    m = re.match(r"Searching for ICD drivers named (.*)$", msg)
    if m and current is not None:
        block.library_paths[current] = m.group(1)
        return current
    if "portability enumeration bit was not set" in msg:
        block.portability_skipped = True
        return current
    if "Found no drivers!" in msg:
        block.no_drivers = True
        return current
    for pattern, outcome in _DRIVER_RULES:
        m = pattern.search(msg)
        if m:
            name = m.group(1)
            block.outcomes[name] = outcome
            if outcome == "json-error" and "this is usually" in msg:
                block.aborted_by = name
            return current
    for pattern, outcome in _CURRENT_RULES:
        if pattern.search(msg) and current is not None:
            block.outcomes[current] = outcome
            return current
    return current


def _layer_line(block: LayerBlock, msg: str, *, in_layer_scan: bool) -> None:
    m = re.match(r'Insert instance layer "(.+)" \((.*)\)$', msg)
    if m:
        block.inserted[m.group(1)] = m.group(2)
        return
    m = re.match(r'Requested layer "(.*)" failed to load', msg)
    if m:
        block.failed.append(m.group(1))
        return
    m = re.search(r"Failed to parse JSON file (.+?), this is usually", msg) or re.search(
        r"Invalid JSON file (.+?)\.?\s*$", msg
    )
    if m and in_layer_scan:
        block.json_errors.append(m.group(1))
