"""Which Vulkan loader the analysis is for: its version decides rules such as the JSON-error one."""

from __future__ import annotations

import re

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
    def json_error_aborts(self) -> bool:
        """A manifest with a JSON syntax error fails every vkCreateInstance (loaders < 1.3.268).

        An unknown version is assumed old: the worse case is the one to warn about.
        """
        return self.version is None or self.version < JSON_ERROR_SKIPS_FROM

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

        An unknown version is assumed old: the worse case is the one to warn about.
        """
        return self.version is not None and self.version >= NON_STRING_DISABLE_SKIPS_FROM

    @property
    def array_lookup_crashes(self) -> bool:
        """Looking up a key in a non-empty JSON array (a "layer" that is an array) crashes the
        loader (loaders before 1.3.302); newer ones find no such key. Unknown: the crash."""
        return self.version is None or self.version < ARRAY_LOOKUP_SAFE_FROM

    @property
    def file_format_version_must_be_string(self) -> bool:
        """A driver manifest whose file_format_version is not a string (a number) is skipped
        (loaders 1.4.303 and later); older ones print it and read the driver. Unknown: old."""
        return self.version is not None and self.version >= STRING_FILE_FORMAT_FROM

    @property
    def strips_printed_fields(self) -> bool:
        """The loader prints a field with cJSON_Print and drops its first and last character
        (loaders before 1.3.251): `12345` is read as `234`, a one-digit value underflows. Newer
        ones use the printed text whole. Unknown: the old rule, whose crash is the worse case."""
        return self.version is None or self.version < PRINTED_WHOLE_FROM

    @property
    def json_lookup(self) -> str:
        """How the loader finds a key in a manifest (`cjson.get`): from 1.4.303 without
        regard to case (`"icd"` is read), an array having no keys; 1.3.302 to 1.4.302 stop at
        an array's first element and use it; older ones crash on an array. Unknown: old."""
        if self.version is not None and self.version >= ANY_CASE_LOOKUP_FROM:
            return cjson.ANY_CASE
        return cjson.STRCMP if self.array_lookup_crashes else cjson.STOP_AT_KEYLESS

    @property
    def layer_fields_must_be_strings(self) -> bool:
        """A layer whose name, type, api_version, implementation_version, description or
        library_path is not a string is skipped (loaders 1.4.303 and later); older ones print
        the value and read it. Unknown: old."""
        return self.version is not None and self.version >= LAYER_STRINGS_FROM


def find_loader(ctx: Context) -> str | None:
    """Where a program linked against libvulkan.so.1 finds it, by the ld.so emulation."""
    from vkdoctor.elf.resolve import loader_lookup

    found = loader_lookup(ctx).found
    return found.path if found is not None else None


def loader_version(ctx: Context) -> LoaderVersion:
    """Fact: the loader's version, from the name of the file libvulkan.so.1 resolves to."""
    path = find_loader(ctx)
    if path is None:
        return LoaderVersion(path=None, file=None, version=None)
    name = final_name(ctx, path)
    m = _VERSIONED.match(name or "")
    version = (int(m[1]), int(m[2]), int(m[3])) if m else None
    return LoaderVersion(path=path, file=name, version=version)
