"""vkdoctor overlay: build the safe LD_LIBRARY_PATH overlay and print how to use it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from vkdoctor.commands import common
from vkdoctor.render.escape import json_text


def from_package_option(f: common.F) -> common.F:
    return click.option(
        "--from-package",
        "from_package",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        metavar="FILE",
        help="A .deb, .rpm or .pkg.tar.zst holding a missing library (repeatable); only the "
        "needed libraries are extracted, into vkdoctor's cache.",
    )(f)


@click.command()
@common.search_path_option
@from_package_option
@common.timeout_option("a package tool that unpacks --from-package")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["shell", "json", "env"]),
    default="shell",
    show_default=True,
    help="shell: an export line; json: dir, ld_library_path, libraries; env: a line for an env file.",
)
def overlay(
    search_path: tuple[str, ...], from_package: tuple[str, ...], timeout: float, fmt: str
) -> None:
    """Build a private overlay for the libraries the Vulkan drivers lack, and print it.

    Only sonames missing from the normal resolution are added, each a symlink to a checked file,
    and only when nothing the process already loads changes. Nothing to do: exit 0, nothing on
    stdout (with --format json: null, as the report's `overlay`). An overlay that cannot help
    (no safe candidate, or an old copy that wins and lacks versions): exit 1, the reason on
    stderr.
    """
    from vkdoctor.overlay.describe import export_line, shadowing_copies, summary_lines
    from vkdoctor.overlay.discover import plan_for
    from vkdoctor.overlay.errors import OverlayError

    ctx = common.host_context(search_path=search_path, timeout=timeout)
    try:
        plan = plan_for(ctx, [Path(p) for p in from_package])
    except OverlayError as exc:
        if fmt == "json":  # a program reads stdout: no overlay, as in every other failure
            common.out("null")
        common.say(f"vkdoctor overlay: {exc.message}")
        if exc.hint:
            common.say(f"  fix: {exc.hint}")
        sys.exit(1)
    for line in summary_lines(plan):
        common.say(f"vkdoctor overlay: {line}")
    if not plan.needed or not plan.built:
        if fmt == "json":
            common.out("null")
        if not plan.needed:
            shadows = shadowing_copies(ctx)
            for problem, fix in shadows:
                # an overlay only adds what is missing: it never replaces a copy that wins
                common.say(f"vkdoctor overlay: an overlay cannot fix this: {problem}")
                common.say(f"  fix: {fix}")
            if shadows:
                sys.exit(1)
            common.say(
                "vkdoctor overlay: nothing to do: every library the Vulkan drivers need resolves"
            )
            sys.exit(0)
        common.say(
            "vkdoctor overlay: cannot build an overlay: no missing library has a safe candidate"
        )
        from vkdoctor.model.sonames import find_remedy

        for name in plan.unsupplied:
            common.say(f"  fix: {find_remedy(name, 'vkdoctor overlay')}")
        sys.exit(1)
    obj = plan.report_object()
    assert obj is not None and plan.ld_path is not None
    if fmt == "json":
        common.out(json_text(obj))
    elif fmt == "env":
        if "\n" in plan.ld_path.value or "\r" in plan.ld_path.value:
            # an env file has one variable a line: the rest of the value would be a line of
            # its own, a variable of the file (BASH_ENV=...) that nobody asked for
            common.say(
                "vkdoctor overlay: --format env: the new LD_LIBRARY_PATH holds a line break "
                f"(from this environment's LD_LIBRARY_PATH: {plan.ld_path.value!r}), which an "
                "env file cannot hold; nothing printed (--format shell quotes it)"
            )
            sys.exit(2)
        common.out(f"LD_LIBRARY_PATH={plan.ld_path.value}")
    else:
        common.out(export_line(plan))
