"""Shell completion of finding codes (click's protocol: `_VKDOCTOR_COMPLETE=bash_source vkdoctor`).

Imported by the commands for their options; the checks and click's completion module are imported
only when a shell asks.
"""

from __future__ import annotations

from typing import Any

import click


def known_codes() -> dict[str, str]:
    """code -> title for every code vkdoctor can emit."""
    from vkdoctor.checks import REGISTRY
    from vkdoctor.runner import INTERNAL_ERROR_CODE

    codes = {c.code: c.title for c in REGISTRY}
    codes[INTERNAL_ERROR_CODE] = "vkdoctor's own check broke"
    return dict(sorted(codes.items()))


def _codes(with_internal: bool) -> dict[str, str]:
    """code or family prefix -> what it stands for."""
    codes = known_codes()
    if not with_internal:
        from vkdoctor.runner import INTERNAL_ERROR_CODE

        codes.pop(INTERNAL_ERROR_CODE, None)
    families: dict[str, list[str]] = {}
    for code in codes:
        families.setdefault(code[:3], []).append(code)
    prefixes = {p: f"every {p} check ({', '.join(c)})" for p, c in families.items() if len(c) > 1}
    return dict(sorted({**prefixes, **codes}.items()))


def _matching(incomplete: str, codes: dict[str, str]) -> list[Any]:
    from click.shell_completion import CompletionItem

    # --select VKD,VKL0<TAB>: the last of the comma-separated codes is the one being typed
    head, comma, last = incomplete.rpartition(",")
    head += comma
    typed = last.strip().upper()
    return [
        CompletionItem(head + code, help=title)
        for code, title in codes.items()
        if code.startswith(typed)
    ]


def check_codes(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """--select/--ignore: the codes and family prefixes of the checks."""
    return _matching(incomplete, _codes(with_internal=False))


def finding_codes(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """explain CODE: every code a finding can have."""
    return _matching(incomplete, _codes(with_internal=True))
