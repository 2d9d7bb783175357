"""The user guide keeps up with the CLI: every command and every option of `check` is described,
the exit-code table is the code's, and the guides' relative links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import click

from vkdoctor import model
from vkdoctor.cli import cli

DOCS = Path(__file__).resolve().parent.parent / "docs"
GUIDE = (DOCS / "user-guide.md").read_text()


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    out = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None, name
        out[name] = command
    return out


def test_every_command_is_in_the_guide():
    commands = _commands()
    assert {"check", "explain"} <= set(commands)
    missing = [name for name in commands if f"`vkdoctor {name}" not in GUIDE]
    assert missing == []


def test_every_option_of_check_is_in_the_guide():
    check = _commands()["check"]
    options = [max(p.opts, key=len) for p in check.params if isinstance(p, click.Option) and p.opts]
    assert {"--junit", "--redact", "--strict", "--format"} <= set(options)
    missing = [opt for opt in options if opt != "--help" and f"{opt}" not in GUIDE]
    assert missing == []


def test_exit_code_table_matches_the_code():
    table = dict(re.findall(r"^\| (\d) \| (.+?) \|$", GUIDE, re.M))
    assert set(table) == {"0", "1", "2", "3"}
    assert int(next(k for k, v in table.items() if v.startswith("nothing failed"))) == model.EXIT_OK
    assert int(next(k for k, v in table.items() if "check failed" in v)) == model.EXIT_FAIL
    assert int(next(k for k, v in table.items() if v.startswith("usage error"))) == model.EXIT_USAGE
    assert int(next(k for k, v in table.items() if "vkdoctor itself broke" in v)) == (
        model.EXIT_INTERNAL
    )


def test_relative_links_in_the_guides_resolve():
    for page in (DOCS / "user-guide.md", DOCS / "ci.md", DOCS / "development.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_anchors_in_the_guide_resolve():
    headings = re.findall(r"^#+ (.+)$", GUIDE, re.M)
    slugs = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
    for anchor in re.findall(r"\]\(#([^)]+)\)", GUIDE):
        assert anchor in slugs, anchor
