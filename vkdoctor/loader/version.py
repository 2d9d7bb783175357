"""Which Vulkan loader the analysis is for: its version decides rules such as the JSON-error one."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from vkdoctor.elf.dynsym import symbol_table
from vkdoctor.loader import cjson
from vkdoctor.loader.stdlib import final_name
from vkdoctor.model.context import Context
from vkdoctor.model.record import record

LOADER_SONAME = "libvulkan.so.1"
_VERSIONED = re.compile(r"^libvulkan\.so\.(\d+)\.(\d+)\.(\d+)$")

#: first loader that skips a manifest with a JSON syntax error instead of failing vkCreateInstance
JSON_ERROR_SKIPS_FROM = (1, 3, 268)
#: first loader whose bundled cJSON refuses text nested deeper than NESTING_LIMIT levels
NESTING_LIMIT_FROM = (1, 4, 303)
NESTING_LIMIT = 1000
#: first loader that keeps the first of two implicit layers with one name (older: the last)
FIRST_DUPLICATE_WINS_FROM = (1, 3, 247)
#: first loader that reads VK_IMPLICIT_LAYER_PATH and VK_ADD_IMPLICIT_LAYER_PATH
IMPLICIT_LAYER_PATH_FROM = (1, 3, 296)
#: first loader that skips an implicit layer whose disable_environment value is not a string
#: (commit caf8afb4, "Refactor to not use fixed length strings"; older ones copy from NULL)
NON_STRING_DISABLE_SKIPS_FROM = (1, 3, 251)
#: first loader whose cJSON_GetObjectItem stops at a keyless (array) element instead of calling
#: strcmp on its NULL key (commit 399eb3f3, "cjson: add NULL check prior to strcmp")
ARRAY_LOOKUP_SAFE_FROM = (1, 3, 302)
#: first loader that skips a driver whose file_format_version is not a string
#: (commit 14752967, "Refactor manifest parsing to use less allocations": cJSON_GetStringValue)
STRING_FILE_FORMAT_FROM = (1, 4, 303)
#: first loader whose cJSON prints a string without quotes, so that a field is used as printed
#: instead of stripped of its first and last character (commit bca23b3f, "Make cJSON not add
#: double quotes to strings")
PRINTED_WHOLE_FROM = (1, 3, 251)
#: first loader whose cJSON_GetObjectItem ignores the case of keys and finds no key in an array
#: (commit b5e14e35, "Update cJSON to latest version")
ANY_CASE_LOOKUP_FROM = (1, 4, 303)
#: first loader that skips a layer whose name, type, versions, description or library_path is
#: not a string (commits 87123c81, "Simplify json string copy routine", and 14752967)
LAYER_STRINGS_FROM = (1, 4, 303)


@record(frozen=True, kw_only=True)
class LoaderVersion:
    #: the libvulkan.so.1 path inside the root, None when not found
    path: str | None
    #: the file it resolves to, e.g. libvulkan.so.1.3.239
    file: str | None
    #: (major, minor, patch) or None when the file name does not say
    version: tuple[int, int, int] | None

    @property
    def text(self) -> str:
        return ".".join(map(str, self.version)) if self.version else "unknown"

    @property
    def named(self) -> str:
        """For a sentence: "loader 1.3.239", or "a loader of unknown version"."""
        return f"loader {self.text}" if self.version else "a loader of unknown version"

    def skips(self, since: tuple[int, int, int], older: str) -> str:
        """What the loader does with a file that loaders from `since` on skip and older ones do
        `older` with: "loader 1.4.309 skips it", or, for an unknown version (which takes the
        newer rule, see docs/loader-emulation.md), both."""
        if self.version is not None:
            return f"{self.named} skips it"
        return (
            f"loaders {'.'.join(map(str, since))} and later skip it, older ones {older} (this "
            "loader's version could not be read from its file)"
        )

    @property
    def json_error_aborts(self) -> bool:
        """A manifest with a JSON syntax error fails every vkCreateInstance (loaders < 1.3.268).
        Unknown: skipped (the rule that predicts no failure: docs/loader-emulation.md)."""
        return self.version is not None and self.version < JSON_ERROR_SKIPS_FROM

    def json_error_effect(self) -> str:
        """What this loader does with a manifest that is not valid JSON, for a sentence."""
        if self.json_error_aborts:
            return (
                f"{self.named} then fails every vkCreateInstance with VK_ERROR_OUT_OF_HOST_MEMORY"
            )
        older = "fail every vkCreateInstance with VK_ERROR_OUT_OF_HOST_MEMORY"
        return self.skips(JSON_ERROR_SKIPS_FROM, older)

    @property
    def json_nesting_limit(self) -> int | None:
        """How deep a manifest may nest before the loader calls it invalid JSON (loaders
        1.4.303 and later, measured on 1.4.309: 1000 levels parse, 1001 do not); None for the
        older recursive parser, which crashes far deeper instead (assumed when unknown)."""
        if self.version is not None and self.version >= NESTING_LIMIT_FROM:
            return NESTING_LIMIT
        return None

    @property
    def first_duplicate_wins(self) -> bool:
        """Of two implicit layers with one name the loader inserts the one found first
        (loaders 1.3.247 and later: loader_add_implicit_layer skips a name already in the list;
        older ones keep the last). Unknown: the current rule."""
        return self.version is None or self.version >= FIRST_DUPLICATE_WINS_FROM

    @property
    def reads_implicit_layer_path(self) -> bool:
        """VK_IMPLICIT_LAYER_PATH replaces the implicit layer search and
        VK_ADD_IMPLICIT_LAYER_PATH comes before it (loaders 1.3.296 and later).

        An unknown version is assumed to read them: a layer they bring is then a suspect.
        """
        return self.version is None or self.version >= IMPLICIT_LAYER_PATH_FROM

    @property
    def non_string_disable_skips(self) -> bool:
        """An implicit layer whose disable_environment value is not a string is skipped with a
        warning (loaders 1.3.251 and later); older ones copy the value from NULL and crash.
        Unknown: skipped (the rule that predicts no failure)."""
        return self.version is None or self.version >= NON_STRING_DISABLE_SKIPS_FROM

    @property
    def array_lookup_crashes(self) -> bool:
        """Looking up a key in a non-empty JSON array (a "layer" that is an array) crashes the
        loader (loaders before 1.3.302); newer ones find no such key. Unknown: no crash."""
        return self.version is not None and self.version < ARRAY_LOOKUP_SAFE_FROM

    @property
    def file_format_version_must_be_string(self) -> bool:
        """A driver manifest whose file_format_version is not a string (a number) is skipped
        (loaders 1.4.303 and later); older ones print it and read the driver. Unknown: old."""
        return self.version is not None and self.version >= STRING_FILE_FORMAT_FROM

    @property
    def strips_printed_fields(self) -> bool:
        """The loader prints a field with cJSON_Print and drops its first and last character
        (loaders before 1.3.251): `12345` is read as `234`, a one-digit value underflows. Newer
        ones use the printed text whole. Unknown: whole (the rule that predicts no crash)."""
        return self.version is not None and self.version < PRINTED_WHOLE_FROM

    @property
    def json_lookup(self) -> str:
        """How the loader finds a key in a manifest (`cjson.get`): from 1.4.303 without
        regard to case (`"icd"` is read), an array having no keys; 1.3.302 to 1.4.302 stop at
        an array's first element and use it; older ones crash on an array. Unknown: the newest
        (no crash on an array, a key found whatever its case)."""
        if self.version is None or self.version >= ANY_CASE_LOOKUP_FROM:
            return cjson.ANY_CASE
        return cjson.STRCMP if self.array_lookup_crashes else cjson.STOP_AT_KEYLESS

    @property
    def layer_fields_must_be_strings(self) -> bool:
        """A layer whose name, type, api_version, implementation_version, description or
        library_path is not a string is skipped (loaders 1.4.303 and later); older ones print
        the value and read it. Unknown: skipped (a layer left out crashes nothing)."""
        return self.version is None or self.version >= LAYER_STRINGS_FROM


def find_loader(ctx: Context) -> str | None:
    """Where a program linked against libvulkan.so.1 finds it, by the ld.so emulation."""
    from vkdoctor.elf.resolve import loader_lookup

    found = loader_lookup(ctx).found
    return found.path if found is not None else None


def loader_version(ctx: Context) -> LoaderVersion:
    """Fact: the loader's version, from the name of the file libvulkan.so.1 resolves to, else
    (a plain libvulkan.so.1: a build from source, a copy in an application's folder or a
    container) from the file's code (`version_in_code`)."""
    path = find_loader(ctx)
    if path is None:
        return LoaderVersion(path=None, file=None, version=None)
    name = final_name(ctx, path)
    m = _VERSIONED.match(name or "")
    version = (int(m[1]), int(m[2]), int(m[3])) if m else version_in_code(ctx, path)
    return LoaderVersion(path=path, file=name, version=version)


#: a loader larger than this is not read for its version (a real one is under 1 MiB)
MAX_LOADER_BYTES = 64 * 1024 * 1024
#: the loader's answer to vkEnumerateInstanceVersion, terminator_EnumerateInstanceVersion's
#: `*pApiVersion = VK_HEADER_VERSION_COMPLETE; return VK_SUCCESS;` as gcc builds it for x86-64
#: and i386: movl $imm32, (%reg); xor %eax, %eax; ret
_ENUMERATE_VERSION = re.compile(rb"\xc7[\x00-\x07](.{4})\x31\xc0\xc3", re.DOTALL)


def version_in_code(ctx: Context, path: str) -> tuple[int, int, int] | None:
    """The version the loader at `path` answers vkEnumerateInstanceVersion with (the headers it
    was built from, which is its own version), read from its code without running it: the
    constant its terminator stores, where every such store in the file agrees on one Vulkan 1.x
    version. None when the file is not readable, exports no vkEnumerateInstanceVersion (not a
    loader: a driver's code stores its own version the same way) or was not built that way."""
    if not symbol_table(ctx, path).defines("vkEnumerateInstanceVersion"):
        return None
    data = _read_bounded(ctx.under(path))
    if data is None:
        return None
    found = set()
    for m in _ENUMERATE_VERSION.finditer(data):
        value = int.from_bytes(m[1], "little")
        variant, major = value >> 29, (value >> 22) & 0x7F
        if variant == 0 and major == 1:
            found.add((1, (value >> 12) & 0x3FF, value & 0xFFF))
    return found.pop() if len(found) == 1 else None


def _read_bounded(host: Path) -> bytes | None:
    """The file's bytes: a regular file only, opened without blocking, MAX_LOADER_BYTES at most."""
    try:
        fd = os.open(host, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_LOADER_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(MAX_LOADER_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
