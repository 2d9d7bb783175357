"""Shell commands built from outside names and values: a fix is pasted into a shell, often a
root one, so a manifest's variable name or a path never reaches it as shell syntax."""

from __future__ import annotations

import re
import shlex

_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def export_command(name: str, value: str) -> str | None:
    """`export NAME=VALUE` as a shell reads it (VALUE quoted), or None when NAME is no shell
    variable name: a manifest names its variables freely, and a fix is pasted into a shell."""
    if not _SHELL_NAME.match(name):
        return None
    return f"export {name}={shlex.quote(value)}"


def unset_command(name: str) -> str | None:
    """`unset NAME`, or None when NAME is no shell variable name (see export_command)."""
    return f"unset {name}" if _SHELL_NAME.match(name) else None
