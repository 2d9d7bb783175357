"""Version ordering of the three package families, in Python (no process per comparison).

Each function follows its tool's C code: dpkg's `verrevcmp` (lib/dpkg/version.c), libalpm's
`alpm_pkg_vercmp` (lib/libalpm/version.c) and rpm's `rpmvercmp` (rpmio/rpmvercmp.c). The tests
check them against `dpkg --compare-versions`, `vercmp` and `rpm.vercmp` on tricky pairs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

from vkdoctor.model.digits import digits_key, is_digits

Family = Literal["dpkg", "pacman", "rpm"]


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


# dpkg ---------------------------------------------------------------------------------------


_SEGMENTS = re.compile(r"([^0-9]*)([0-9]*)")
#: dpkg's character order as code points: "~" < end of part < letters < everything else
_DPKG_ORDER = {ord("~"): "\x01"}
_DPKG_ORDER.update({c: chr(c + 0x100) for c in range(ord("A"), ord("Z") + 1)})
_DPKG_ORDER.update({c: chr(c + 0x100) for c in range(ord("a"), ord("z") + 1)})
_DPKG_ORDER.update(
    {c: chr(c + 0x200) for c in range(0x20, 0x7F) if c not in _DPKG_ORDER and not chr(c).isdigit()}
)
_END = "\x02"


@lru_cache(maxsize=8192)  # a database compares a few hundred versions, each many times
def _dpkg_key(part: str) -> tuple[tuple[str, tuple[int, str]], ...]:
    """A sort key equal to dpkg's verrevcmp order: (non-digits, number) pairs, each non-digit
    run translated so that Python's string order is dpkg's, and ended by a marker that sorts
    between "~" and everything else (so "1.0~" < "1.0" < "1.0a" < "1.0.1")."""
    return tuple(
        (text.translate(_DPKG_ORDER) + _END, digits_key(num))
        for text, num in _SEGMENTS.findall(part)
    )


def _verrevcmp(a: str, b: str) -> int:
    ka, kb = _dpkg_key(a), _dpkg_key(b)
    return (ka > kb) - (ka < kb)


def _epoch(head: str) -> tuple[int, str]:
    """An epoch as a `digits_key`; one that is not ASCII digits (superscripts, letters) counts
    as 0, as before."""
    return digits_key(head) if is_digits(head) else (0, "")


def _dpkg_split(v: str) -> tuple[tuple[int, str], str, str]:
    v = v.strip()
    epoch = (0, "")
    if ":" in v:
        head, v = v.split(":", 1)
        epoch = _epoch(head)
    upstream, _, revision = v.rpartition("-")
    if not upstream:
        upstream, revision = revision, ""
    return epoch, upstream, revision


def dpkg_compare(a: str, b: str) -> int:
    """-1, 0 or 1, as `dpkg --compare-versions a lt/eq/gt b` would decide."""
    ea, ua, ra = _dpkg_split(a)
    eb, ub, rb = _dpkg_split(b)
    if ea != eb:
        return 1 if ea > eb else -1
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


# rpm and pacman share the segment walk; pacman's is the older variant ----------------------


def _isalnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _segment(s: str, i: int, digits: bool) -> int:
    while i < len(s) and (s[i].isdigit() if digits else (s[i].isascii() and s[i].isalpha())):
        i += 1
    return i


def _compare_segments(one: str, two: str) -> int | None:
    """Compare one numeric-or-alpha segment pair; None when equal."""
    if one.isdigit():
        one, two = one.lstrip("0"), two.lstrip("0")
        if len(one) != len(two):
            return 1 if len(one) > len(two) else -1
    if one != two:
        return 1 if one > two else -1
    return None


def rpmvercmp(a: str, b: str) -> int:
    """rpm 4.18's rpmvercmp, with `~` (sorts first) and `^` (sorts after the base version)."""
    if a == b:
        return 0
    i = j = 0
    while i < len(a) or j < len(b):
        while i < len(a) and not _isalnum(a[i]) and a[i] not in "~^":
            i += 1
        while j < len(b) and not _isalnum(b[j]) and b[j] not in "~^":
            j += 1
        ca = a[i] if i < len(a) else ""
        cb = b[j] if j < len(b) else ""
        if ca == "~" or cb == "~":
            if ca != "~":
                return 1
            if cb != "~":
                return -1
            i += 1
            j += 1
            continue
        if ca == "^" or cb == "^":
            if not ca:
                return -1
            if not cb:
                return 1
            if ca != "^":
                return 1
            if cb != "^":
                return -1
            i += 1
            j += 1
            continue
        if not (ca and cb):
            break
        digits = ca.isdigit()
        pi, pj = _segment(a, i, digits), _segment(b, j, digits)
        if pj == j:
            return 1 if digits else -1
        cmp = _compare_segments(a[i:pi], b[j:pj])
        if cmp is not None:
            return cmp
        i, j = pi, pj
    if i >= len(a) and j >= len(b):
        return 0
    return -1 if i >= len(a) else 1


def _alpm_rpmvercmp(a: str, b: str) -> int:
    if a == b:
        return 0
    i = j = 0
    pi = pj = 0
    while i < len(a) and j < len(b):
        while i < len(a) and not _isalnum(a[i]):
            i += 1
        while j < len(b) and not _isalnum(b[j]):
            j += 1
        if not (i < len(a) and j < len(b)):
            break
        if (i - pi) != (j - pj):
            return -1 if (i - pi) < (j - pj) else 1
        digits = a[i].isdigit()
        pi, pj = _segment(a, i, digits), _segment(b, j, digits)
        if pj == j:
            return 1 if digits else -1
        cmp = _compare_segments(a[i:pi], b[j:pj])
        if cmp is not None:
            return cmp
        i, j = pi, pj
    rest_a, rest_b = a[i:], b[j:]
    if not rest_a and not rest_b:
        return 0
    b_alpha = bool(rest_b) and rest_b[0].isascii() and rest_b[0].isalpha()
    a_alpha = bool(rest_a) and rest_a[0].isascii() and rest_a[0].isalpha()
    if (not rest_a and not b_alpha) or a_alpha:
        return -1
    return 1


def _alpm_split(v: str) -> tuple[str, str, str | None]:
    k = 0
    while k < len(v) and v[k].isdigit():
        k += 1
    if k < len(v) and v[k] == ":":
        epoch, rest = v[:k] or "0", v[k + 1 :]
    else:
        epoch, rest = "0", v
    if "-" in rest:
        ver, rel = rest.rsplit("-", 1)
        return epoch, ver, rel
    return epoch, rest, None


def pacman_compare(a: str, b: str) -> int:
    """-1, 0 or 1, as pacman's `vercmp a b` prints."""
    if a == b:
        return 0
    ea, va, ra = _alpm_split(a)
    eb, vb, rb = _alpm_split(b)
    ret = _alpm_rpmvercmp(ea, eb) or _alpm_rpmvercmp(va, vb)
    if ret == 0 and ra is not None and rb is not None:
        ret = _alpm_rpmvercmp(ra, rb)
    return ret


def _rpm_split(v: str) -> tuple[tuple[int, str], str, str | None]:
    epoch = (0, "")
    if ":" in v:
        head, v = v.split(":", 1)
        epoch = _epoch(head)
    if "-" in v:
        ver, rel = v.rsplit("-", 1)
        return epoch, ver, rel
    return epoch, v, None


def rpm_compare(a: str, b: str) -> int:
    """Compare [E:]V[-R] the way rpm compares EVRs (a missing epoch is 0, a missing release is not compared)."""
    ea, va, ra = _rpm_split(a)
    eb, vb, rb = _rpm_split(b)
    if ea != eb:
        return 1 if ea > eb else -1
    ret = rpmvercmp(va, vb)
    if ret == 0 and ra is not None and rb is not None:
        ret = rpmvercmp(ra, rb)
    return ret


COMPARATORS: dict[str, Callable[[str, str], int]] = {
    "dpkg": dpkg_compare,
    "pacman": pacman_compare,
    "rpm": rpm_compare,
}


def compare(family: str, a: str, b: str) -> int:
    """Order two versions of `family` ("dpkg", "pacman", "rpm")."""
    return COMPARATORS[family](a, b)


def satisfies(family: str, installed: str, op: str, wanted: str) -> bool:
    """Whether `installed` meets a versioned relation `op wanted` (ops of any family's spelling)."""
    c = compare(family, installed, wanted)
    return {
        "<<": c < 0,
        "<": c < 0,
        "<=": c <= 0,
        "=": c == 0,
        "==": c == 0,
        ">=": c >= 0,
        ">>": c > 0,
        ">": c > 0,
    }.get(op, True)
