"""vkdoctor exec -- CMD ARGS...: run CMD under the overlay; exit with CMD's status."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from vkdoctor.commands import common
from vkdoctor.commands.overlay import from_package_option


@click.command(
    "exec",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@common.search_path_option
@from_package_option
@common.timeout_option("a package tool that unpacks --from-package")
@click.option("-q", "--quiet", is_flag=True, help="Say nothing on stderr about the overlay.")
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_command(
    search_path: tuple[str, ...],
    from_package: tuple[str, ...],
    timeout: float,
    quiet: bool,
    cmd: tuple[str, ...],
) -> None:
    """Run CMD with LD_LIBRARY_PATH set to the overlay (when one is needed and safe).

    CMD replaces vkdoctor, so its exit status and signals are the command's own: a CI gate reads
    `vkdoctor exec --search-path DIR -- cargo test ...`. With nothing missing, CMD runs unchanged.
    """
    from vkdoctor.overlay.describe import shadowing_copies, summary_lines
    from vkdoctor.overlay.discover import plan_for
    from vkdoctor.overlay.errors import OverlayError

    if not cmd[0]:
        raise click.UsageError("the command to run is an empty string")

    def say(text: str) -> None:
        if not quiet:
            common.err(f"vkdoctor exec: {text}")

    ctx = common.host_context(search_path=search_path, timeout=timeout)
    env = dict(os.environ)
    try:
        plan = plan_for(ctx, [Path(p) for p in from_package])
    except OverlayError as exc:
        say(f"no overlay: {exc.message}; running {cmd[0]} unchanged")
    else:
        if plan.needed:
            for line in summary_lines(plan):
                say(line)
        else:
            for problem, fix in shadowing_copies(ctx):
                say(f"an overlay cannot fix this: {problem}; fix: {fix}")
        if plan.built and plan.ld_path is not None:
            env["LD_LIBRARY_PATH"] = plan.ld_path.value
            say(f"LD_LIBRARY_PATH={plan.ld_path.value}")
        elif plan.needed:
            say(f"no safe overlay; running {cmd[0]} unchanged")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(cmd[0], list(cmd), env)
    except FileNotFoundError:
        why = "No such file or directory" if "/" in cmd[0] else "command not found"
        common.err(f"vkdoctor exec: {cmd[0]}: {why}")
        sys.exit(127)
    except OSError as exc:
        common.err(f"vkdoctor exec: cannot run {cmd[0]}: {exc.strerror or exc}")
        sys.exit(126)
