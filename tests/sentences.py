"""How vkdoctor's fixes were written before they were data, `[sudo] A && [sudo] B. Then [sudo] C.
Sentence.`, read back into a Remedy: the oracle by which the tests hold a fix that is now built
as data to what its old sentence said (tests/test_remedy_packages.py)."""

from __future__ import annotations

from vkdoctor.model import Remedy

#: the programs vkdoctor's fixes run: a fix whose sentences start with one of them is commands
_PROGRAMS = frozenset(
    [
        "apt",
        "apt-get",
        "apt-mark",
        "apk",
        "chmod",
        "conda",
        "cp",
        "dnf",
        "docker",
        "dpkg",
        "export",
        "find",
        "ldconfig",
        "ln",
        "mkdir",
        "mount",
        "pacman",
        "patchelf",
        "pip",
        "ppa-purge",
        "rm",
        "rpm",
        "unset",
        "usermod",
        "vkdoctor",
        "zypper",
    ]
)


def remedy_from(fix: str) -> Remedy:
    """A fix written as one string, `[sudo] A && [sudo] B. Then [sudo] C.
    Sentence.`: the leading commands (with `sudo` taken off into `needs_root`) and what follows
    them. A fix that opens with words, or mixes commands with and without sudo, is all text."""
    import re

    commands: list[str] = []
    rest = fix
    while True:
        m = re.match(r"((?:Then )?)(.+?)(?=\. |\.$| \(|: |; |, or |$)", rest)
        if m is None or (commands and not m.group(1)) or (not commands and m.group(1)):
            break
        parts = m.group(2).split(" && ")
        if not all(p.removeprefix("sudo ").split(" ", 1)[0] in _PROGRAMS for p in parts):
            break
        commands += parts
        rest = rest[m.end() :]
        if not rest.startswith(". Then "):
            break
        rest = rest[2:]
    roots = {c.startswith("sudo ") for c in commands}
    if not commands or len(roots) > 1:
        return Remedy(text=fix)
    text = rest.removeprefix(". ") if rest[:2] == ". " else rest
    if rest.startswith(" ("):
        text = rest[1:]
    return Remedy(
        commands=tuple(c.removeprefix("sudo ") for c in commands),
        needs_root=roots == {True},
        text=text,
    )
