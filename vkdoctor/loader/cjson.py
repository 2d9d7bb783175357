"""The JSON reader of the Khronos loader (its bundled cJSON, as in loader 1.3.239), ported.

The loader does not use a strict JSON parser, so Python's `json` would both reject manifests the
loader accepts (trailing garbage, raw control characters, odd escapes) and accept ones it rejects
(NaN). This port reproduces what the loader sees: the text up to the first NUL byte, parsed with
cJSON's rules, keys looked up case-sensitively with the first duplicate winning, and values
turned back into text with `cJSON_Print` the way the loader reads every field.

It is iterative, so nesting depth costs no Python stack; `max_depth` bounds it all the same
(at the depth where the loader's own recursive parser crashes: PARSE_CRASH_DEPTH).
"""

from __future__ import annotations

import math

from vkdoctor.model.record import field, record

#: node types, as cJSON names them
NULL, FALSE, TRUE, NUMBER, STRING, ARRAY, OBJECT = (
    "null",
    "false",
    "true",
    "number",
    "string",
    "array",
    "object",
)


@record(eq=False)
class Node:
    type: str
    #: the key of this node inside its parent object; None inside arrays and at the top
    key: bytes | None = None
    string: bytes = b""
    number: float = 0.0
    children: list[Node] = field(default_factory=list)


class ParseError(Exception):
    """cJSON_Parse returned NULL. `offset` is where it gave up, in bytes."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.offset = offset
        self.reason = reason


class TooDeep(Exception):
    """Nesting deeper than we agree to follow; the loader's own recursive parser may crash on it."""

    def __init__(self, depth: int) -> None:
        super().__init__(f"nesting deeper than {depth} levels")
        self.depth = depth


class NestingLimit(ParseError):
    """Nested deeper than the newer loaders' cJSON accepts (CJSON_NESTING_LIMIT): to them the
    manifest is not valid JSON."""

    def __init__(self, limit: int) -> None:
        Exception.__init__(self, f"nested deeper than {limit} levels, the limit of its JSON parser")
        self.offset = -1
        self.reason = "too deep"


def parse_for(data: bytes, *, nesting_limit: int | None, crash_depth: int) -> Node:
    """`parse` as a loader does: one with a nesting limit refuses deeper text as invalid JSON
    (NestingLimit); one without parses until its recursion crashes (TooDeep past
    `crash_depth`)."""
    if nesting_limit is None:
        return parse(data, max_depth=crash_depth)
    try:
        return parse(data, max_depth=nesting_limit)
    except TooDeep:
        raise NestingLimit(nesting_limit) from None


class TooMany(Exception):
    """More values than we agree to hold in memory (a real manifest has a few dozen)."""

    def __init__(self, count: int) -> None:
        super().__init__(f"more than {count} JSON values")
        self.count = count


class LoaderCrash(Exception):
    """What the loader would do here is undefined behaviour in C (NULL dereference, underflow)."""


def _skip(s: bytes, i: int) -> int:
    n = len(s)
    while i < n and s[i] <= 32:
        i += 1
    return i


def _hex4(s: bytes, i: int) -> int:
    h = 0
    for k in range(4):
        c = s[i + k] if i + k < len(s) else 0
        if 48 <= c <= 57:
            d = c - 48
        elif 65 <= c <= 70:
            d = c - 55
        elif 97 <= c <= 102:
            d = c - 87
        else:
            return 0
        h = (h << 4) | d
    return h


def _parse_string(s: bytes, i: int) -> tuple[bytes, int]:
    """At s[i] == '"'. Unterminated strings end at the end of the text, as in cJSON."""
    n = len(s)
    i += 1
    out = bytearray()
    while i < n and s[i] != 0x22:
        c = s[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        i += 1
        e = s[i] if i < n else 0
        simple = {0x62: 8, 0x66: 12, 0x6E: 10, 0x72: 13, 0x74: 9}
        if e in simple:
            out.append(simple[e])
        elif e == 0x75:
            uc = _hex4(s, i + 1)
            i += 4
            if not ((0xDC00 <= uc <= 0xDFFF) or uc == 0):
                ok = True
                if 0xD800 <= uc <= 0xDBFF:
                    if not (i + 2 < n and s[i + 1] == 0x5C and s[i + 2] == 0x75):
                        ok = False
                    else:
                        uc2 = _hex4(s, i + 3)
                        i += 6
                        if uc2 < 0xDC00 or uc2 > 0xDFFF:
                            ok = False
                        else:
                            uc = 0x10000 + (((uc & 0x3FF) << 10) | (uc2 & 0x3FF))
                if ok:
                    out += chr(uc).encode("utf-8", "surrogatepass")
        elif e == 0:
            break
        else:
            out.append(e)
        i += 1
    if i < n and s[i] == 0x22:
        i += 1
    return bytes(out), i


def _parse_number(s: bytes, i: int) -> tuple[float, int]:
    n = len(s)
    sign = 1.0
    value = 0.0
    scale = 0
    subscale = 0
    signsub = 1
    if i < n and s[i] == 0x2D:
        sign = -1.0
        i += 1
    if i < n and s[i] == 0x30:
        i += 1
    if i < n and 0x31 <= s[i] <= 0x39:
        while i < n and 0x30 <= s[i] <= 0x39:
            value = value * 10.0 + (s[i] - 0x30)
            i += 1
    if i + 1 < n and s[i] == 0x2E and 0x30 <= s[i + 1] <= 0x39:
        i += 1
        while i < n and 0x30 <= s[i] <= 0x39:
            value = value * 10.0 + (s[i] - 0x30)
            scale -= 1
            i += 1
    if i < n and s[i] in (0x65, 0x45):
        i += 1
        if i < n and s[i] == 0x2B:
            i += 1
        elif i < n and s[i] == 0x2D:
            signsub = -1
            i += 1
        while i < n and 0x30 <= s[i] <= 0x39:
            subscale = min(subscale * 10 + (s[i] - 0x30), 100000)
            i += 1
    try:
        result = sign * value * math.pow(10.0, scale + subscale * signsub)
    except OverflowError:
        result = sign * math.inf
    return result, i


def parse(data: bytes, *, max_depth: int = 1000, max_nodes: int = 200_000) -> Node:
    """Parse like `cJSON_Parse`: text up to the first NUL, leading blanks skipped, trailing text ignored."""
    s = data.split(b"\0", 1)[0]
    n = len(s)
    root = Node(NULL)
    # Each frame: (container node, state) where state is "first" or "next".
    stack: list[Node] = []
    i = _skip(s, 0)
    target = root
    key: bytes | None = None
    count = 1

    while True:
        # Parse one value into `target` (with `key`), starting at s[i].
        c = s[i] if i < n else 0
        target.key = key
        if s.startswith(b"null", i):
            target.type = NULL
            i += 4
        elif s.startswith(b"false", i):
            target.type = FALSE
            i += 5
        elif s.startswith(b"true", i):
            target.type = TRUE
            i += 4
        elif c == 0x22:
            target.type = STRING
            target.string, i = _parse_string(s, i)
        elif c == 0x2D or 0x30 <= c <= 0x39:
            target.type = NUMBER
            target.number, i = _parse_number(s, i)
        elif c in (0x5B, 0x7B):
            target.type = ARRAY if c == 0x5B else OBJECT
            close = 0x5D if c == 0x5B else 0x7D
            i = _skip(s, i + 1)
            if len(stack) >= max_depth:  # an empty container is one more level too
                raise TooDeep(max_depth)
            if i < n and s[i] == close:
                i += 1
            else:
                stack.append(target)
                count += 1
                if count > max_nodes:
                    raise TooMany(max_nodes)
                child = Node(NULL)
                target.children.append(child)
                if target.type == OBJECT:
                    key, i = _object_key(s, i)
                else:
                    key = None
                target = child
                continue
        else:
            raise ParseError(i, "unexpected character" if i < n else "unexpected end of text")

        # A value is complete; close containers or move to the next sibling.
        while True:
            if not stack:
                return root
            parent = stack[-1]
            close = 0x5D if parent.type == ARRAY else 0x7D
            i = _skip(s, i)
            if i < n and s[i] == 0x2C:
                count += 1
                if count > max_nodes:
                    raise TooMany(max_nodes)
                child = Node(NULL)
                parent.children.append(child)
                i = _skip(s, i + 1)
                if parent.type == OBJECT:
                    key, i = _object_key(s, i)
                else:
                    key = None
                target = child
                break
            if i < n and s[i] == close:
                i += 1
                stack.pop()
                continue
            raise ParseError(i, "expected ',' or '" + chr(close) + "'")


def _object_key(s: bytes, i: int) -> tuple[bytes, int]:
    if i >= len(s) or s[i] != 0x22:
        raise ParseError(i, "expected a string key")
    k, i = _parse_string(s, i)
    i = _skip(s, i)
    if i >= len(s) or s[i] != 0x3A:
        raise ParseError(i, "expected ':'")
    return k, _skip(s, i + 1)


#: How the loader's cJSON_GetObjectItem finds a key (LoaderVersion.json_lookup): `strcmp` on
#: every key, crashing on a keyless (array) element; the same, stopping at and returning the
#: first keyless element; or ignoring case, an array having no keys.
STRCMP = "strcmp"
STOP_AT_KEYLESS = "stop-at-keyless"
ANY_CASE = "any-case"


def get(node: Node, key: str, lookup: str = STRCMP) -> Node | None:
    """`cJSON_GetObjectItem`: the first child whose key is `key`, as `lookup` compares."""
    want = key.encode()
    for child in node.children:
        if child.key is None:
            if lookup == STRCMP:
                raise LoaderCrash(
                    f"looking up '{key}' in a JSON array dereferences NULL in the loader"
                )
            if lookup == STOP_AT_KEYLESS:
                return child
            continue
        if child.key == want or (lookup == ANY_CASE and child.key.lower() == want.lower()):
            return child
    return None


def _print_string(b: bytes) -> bytes:
    """The loader's modified print_string_ptr: quotes, backslashes and \\b\\f\\n\\r\\t are kept
    as they are (no escaping), other control characters become "u%04x" without a backslash."""
    out = bytearray(b'"')
    for c in b:
        if 0 < c < 32 and c not in (8, 12, 10, 13, 9):
            out += b"u%04x" % c
        else:
            out.append(c)
    out += b'"'
    return bytes(out)


def _print_number(d: float) -> bytes:
    if d == 0:
        return b"0"
    if math.isfinite(d) and -(2**31) <= d <= 2**31 - 1 and float(int(d)) == d:
        return b"%d" % int(d)
    if not math.isfinite(d):
        return b"inf" if d > 0 else b"-inf"
    if abs(math.floor(d) - d) <= 2.220446049250313e-16 and abs(d) < 1.0e60:
        return b"%.0f" % d
    if abs(d) < 1.0e-6 or abs(d) > 1.0e9:
        return b"%e" % d
    return b"%f" % d


#: What loader 1.3.239 does with deep nesting, measured with vulkaninfo and an 8 MiB stack
#: (docs/loader-emulation.md): its recursive parser survives 150,000 levels and crashes
#: (SIGSEGV) at 175,000, arrays and objects alike; cJSON_Print, which reads every field it uses,
#: survives 85,000 levels of arrays and crashes at 100,000.
PARSE_CRASH_DEPTH = 150_000
PRINT_CRASH_DEPTH = 85_000
#: cJSON_Print builds each level's text by copying its children's, so it copies about (text
#: size x nesting depth) bytes; objects indent each level by its depth, so n levels of objects
#: are n^2 bytes of text and n^3 of copying. Measured on a driver's api_version nested in
#: objects, per vulkaninfo run (which scans the manifests more than once): 1,000 levels 2 s,
#: 1,200 levels 15 s, 1,500 levels 8 s, 2,000 levels 40 s, 3,000 levels over 30 s; an
#: explicit layer's api_version 1.5 s at 600 levels, 21 s at 1,000, 37 s at 1,200 (the times
#: spread with the machine's load; 3,000 levels of an implicit layer's api_version: a SIGSEGV
#: after 10 s on a quiet machine, still running at 10 s on a loaded one). Past this much
#: copying (about 1,150 levels of objects) the loader is said to hang.
PRINT_HANG_WORK = 1_000_000_000


class LoaderHang(LoaderCrash):
    """What the loader would do here takes minutes to hours (it is not undefined behaviour)."""


def _scalar(node: Node) -> bytes:
    if node.type == NULL:
        return b"null"
    if node.type == FALSE:
        return b"false"
    if node.type == TRUE:
        return b"true"
    if node.type == NUMBER:
        return _print_number(node.number)
    return _print_string(node.string)


def _print_cost(node: Node) -> tuple[int, int, int]:
    """(printed size, bytes cJSON_Print copies, container nesting depth) of `node`, without
    printing it: iterative, linear in the number of nodes."""
    order: list[tuple[Node, int]] = []
    todo = [(node, 0)]
    while todo:
        n, d = todo.pop()
        order.append((n, d))
        todo.extend((c, d + 1) for c in n.children)
    size: dict[int, int] = {}
    nest: dict[int, int] = {}
    work = 0
    for n, d in reversed(order):
        if n.type not in (ARRAY, OBJECT):
            size[id(n)] = len(_scalar(n))
            nest[id(n)] = 0
            continue
        k = len(n.children)
        inner = sum(size[id(c)] for c in n.children)
        if n.type == ARRAY:
            total = 2 if not k else 2 + inner + 2 * (k - 1)
        elif not k:
            total = 3 + max(d - 1, 0)
        else:
            keys = sum(len(_print_string(c.key or b"")) + d + 3 for c in n.children)
            total = 2 + inner + keys + 2 * (k - 1) + 2 + d
        size[id(n)] = total
        nest[id(n)] = 1 + max((nest[id(c)] for c in n.children), default=0)
        work += total
    return size[id(node)], work, nest[id(node)]


#: where print_value stops: beyond it only the loader's memory grows (a version takes its first
#: four tokens, and a path longer than PATH_MAX cannot be opened), while a deep object's printed
#: indentation grows with the square of its depth
MAX_PRINTED = 64 << 10


def print_value(node: Node, depth: int = 0) -> bytes:
    """`cJSON_Print` (formatted), iteratively, at most MAX_PRINTED bytes of it. A value the
    loader's recursive printer crashes on raises LoaderCrash, one it would copy for minutes
    LoaderHang (see PRINT_HANG_WORK)."""
    if node.type not in (ARRAY, OBJECT):
        return _scalar(node)
    _size, work, nest = _print_cost(node)
    if nest > PRINT_CRASH_DEPTH:
        raise LoaderCrash(
            f"a value nested {nest} levels deep overflows the stack of the loader's recursive "
            f"cJSON_Print (measured: it crashes past {PRINT_CRASH_DEPTH} levels)"
        )
    if work > PRINT_HANG_WORK:
        raise LoaderHang(
            f"a value nested {nest} levels deep makes the loader's cJSON_Print copy about "
            f"{work >> 20} MiB (measured: 1,200 levels of objects take 15 s, 2,000 levels 40 s; "
            "3,000 levels run 10 s and more, and end in a crash (SIGSEGV) on some machines)"
        )
    out = bytearray()
    stack: list[tuple[Node, int, int]] = [(node, depth, -1)]
    while stack and len(out) <= MAX_PRINTED:
        n, d, i = stack.pop()
        if n.type not in (ARRAY, OBJECT):
            out += _scalar(n)
            continue
        kids = n.children
        if not kids:
            out += b"[]" if n.type == ARRAY else b"{\n" + b"\t" * max(d - 1, 0) + b"}"
            continue
        if i < 0:
            out += b"[" if n.type == ARRAY else b"{\n"
            i = 0
        if i == len(kids):
            out += b"]" if n.type == ARRAY else b"\n" + b"\t" * d + b"}"
            continue
        if n.type == ARRAY:
            out += b", " if i else b""
        else:
            out += (b",\n" if i else b"") + b"\t" * (d + 1)
            out += _print_string(kids[i].key or b"") + b":\t"
        stack.append((n, d, i + 1))
        stack.append((kids[i], d + 1, -1))
    return bytes(out[:MAX_PRINTED])


def field_text(node: Node, *, stripped: bool = True) -> bytes:
    """What the loader makes of a field it reads with cJSON_Print and strips of its quotes.

    For a string that is its (escaped) text; for any other type, the printed form minus its first
    and last character, which is what the loader really uses. Not `stripped` (loaders whose
    cJSON prints strings without quotes): the printed form whole.
    """
    printed = print_value(node)
    if not stripped and node.type != STRING:
        return printed
    if len(printed) < 2:
        raise LoaderCrash(
            f"the value {printed.decode(errors='replace')} prints as one character; "
            "the loader's quote stripping underflows"
        )
    return printed[1:-1]
