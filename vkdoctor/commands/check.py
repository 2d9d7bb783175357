"""vkdoctor check: everything, static checks first, then the probe."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vkdoctor.commands import common
from vkdoctor.commands.overlay import from_package_option
from vkdoctor.runner import code_patterns, run_checks, select, start_forks, unknown_patterns
from vkdoctor.speed import inputs

if TYPE_CHECKING:
    from vkdoctor.checks.base import Check
    from vkdoctor.model import Report


def check_codes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """--select/--ignore CODE<TAB>: asked only by a shell, so imported only then."""
    from vkdoctor.commands import completion

    return completion.check_codes(ctx, param, incomplete)


@click.command()
@common.root_option
@common.search_path_option
@common.timeout_option("the driver load test, the probe, a package tool")
@common.output_options
@common.disk_options
@from_package_option
@click.option("--no-probe", is_flag=True, help="Static checks only; do not run the compute probe.")
@click.option("--cpu", is_flag=True, help="The probe must use a CPU adapter on Vulkan (lavapipe).")
@common.gpu_option
@common.capabilities_option
@click.option(
    "--adapter",
    metavar="TEXT",
    callback=common.adapter_text,
    help="The probe must use the adapter whose name contains TEXT.",
)
@click.option(
    "--github-env",
    is_flag=True,
    help="GitHub Actions: append the proven overlay's LD_LIBRARY_PATH to $GITHUB_ENV, so that "
    "the job's later steps (the gate) run under it.",
)
@click.option(
    "--select",
    "selected",
    multiple=True,
    metavar="CODE",
    shell_complete=check_codes,
    help="Run only checks with this code or prefix (repeatable, or comma-separated: VKD,VKL002).",
)
@click.option(
    "--ignore",
    "ignored",
    multiple=True,
    metavar="CODE",
    shell_complete=check_codes,
    help="Do not run checks with this code or prefix (repeatable, or comma-separated).",
)
def check(
    root: str | None,
    search_path: tuple[str, ...],
    timeout: float,
    json_file: str | None,
    fmt: str,
    strict: bool,
    verbose: int,
    debug: bool,
    disk_warn: int,
    disk_fail: int,
    from_package: tuple[str, ...],
    no_probe: bool,
    cpu: bool,
    gpu: bool,
    capabilities: bool,
    adapter: str | None,
    github_env: bool,
    selected: tuple[str, ...],
    ignored: tuple[str, ...],
) -> None:
    """Inspect drivers, loader, libraries, packages, disk and environment, then run the probe."""
    common.one_adapter_choice(cpu, adapter, gpu)
    from vkdoctor.model import githubenv

    try:
        github_file = githubenv.target(os.environ) if github_env else None
    except githubenv.GithubEnvError as exc:
        raise click.UsageError(str(exc)) from exc
    common.check_outputs(fmt, json_file)
    _check_disk_limits(disk_warn, disk_fail)
    if verbose:
        common.say_cache_unused()
    ctx = common.host_context(
        root=root,
        search_path=search_path,
        timeout=timeout,
        cpu=cpu,
        gpu=gpu,
        capabilities=capabilities,
        adapter=adapter,
        probe=not no_probe and root is None,
        disk_warn_bytes=disk_warn,
        disk_fail_bytes=disk_fail,
        packages=tuple(Path(p) for p in from_package),
    )
    # The load test's child first (this imports only the loader's emulation and the load test):
    # it runs on another core while the other checks are imported and run.
    from vkdoctor.checks import loadtest as load_checks
    from vkdoctor.facts.loadtest import prefetch

    early_ctx = ctx
    early = prefetch(ctx) if select(load_checks.CHECKS, selected, ignored) else None
    from vkdoctor.facts.overlay import context_for_checks, opted_in

    # which checks fork or start work ahead (this imports the package checks' module)
    from vkdoctor.speed.schedule import SCHEDULE

    forked = {}
    if not selected and not ignored and not opted_in(ctx):
        # The package checks' fork next, before the other checks are imported, so that it runs
        # on another core for longer: every check runs (they ask whether VKP002, VKL002 and
        # VKL003 do), and in this Context (no overlay to run them under).
        from vkdoctor.checks import packages as package_checks

        forked = start_forks(ctx, package_checks.CHECKS, SCHEDULE, debug=debug)
    chosen = _chosen(selected, ignored)
    if any(c.code == "VKO001" for c in chosen) and opted_in(ctx):
        # the user asked for the overlay: every check below runs under it
        ctx = context_for_checks(ctx)
    load_chosen = any(c.family == "load" for c in chosen)
    if early is not None and (ctx is not early_ctx or not load_chosen):
        # started in the user's environment, and the checks run in the overlay's
        early.cancel()
    if load_chosen:
        prefetch(ctx)
    # the probe runs after every static check, and not at all with --no-probe or --root
    static = [c for c in chosen if c.code[:3] != "VKR"]
    # with --root the probe is listed as not applicable (it needs the live machine)
    probes = [c for c in chosen if c.code[:3] == "VKR"] if not no_probe else []
    results = run_checks(ctx, [*static, *probes], debug=debug, schedule=SCHEDULE, forked=forked)
    if inputs.recorder() is not None:  # this run may be replayed: what the checks ran in
        from vkdoctor.speed import replay

        replay.note_checks(ctx, os.environ)
    from vkdoctor.facts.report import build_report

    report = build_report(ctx, results, command="check")
    code = common.emit(report, fmt=fmt, json_file=json_file, strict=strict, verbose=verbose)
    if github_file is not None:
        code = _export_overlay(report, github_file, code)
    sys.exit(code)


def _check_disk_limits(disk_warn: int, disk_fail: int) -> None:
    if disk_fail > disk_warn:
        from vkdoctor.model.units import format_size

        raise click.UsageError(
            f"--disk-fail ({format_size(disk_fail)}) must not be larger than --disk-warn "
            f"({format_size(disk_warn)}); a number without a unit is bytes: 5G is five gibibytes"
        )


def _chosen(selected: tuple[str, ...], ignored: tuple[str, ...]) -> list[type[Check]]:
    """The checks --select and --ignore leave; a usage error for a pattern that names no check
    or for a choice that leaves none."""
    from vkdoctor.checks import REGISTRY

    for option, given in (("--select", selected), ("--ignore", ignored)):
        unknown = unknown_patterns(REGISTRY, given)
        if unknown:
            # an --ignore with a typo would leave on what a CI gate meant to turn off
            raise click.UsageError(
                f"{option} {', '.join(unknown)}: no check has such a code; "
                "`vkdoctor explain` lists the codes"
            )
        if given and not code_patterns(given):
            raise click.UsageError(f"{option} needs a check code or prefix (VKD, VKL002)")
    chosen = select(REGISTRY, selected, ignored)
    if not chosen:
        # a typo in a CI gate must not turn it green by running nothing
        raise click.UsageError(
            "--select/--ignore leave no check to run "
            f"(select {', '.join(selected) or 'all'}, ignore {', '.join(ignored) or 'none'}); "
            "`vkdoctor explain` lists the codes"
        )
    return chosen


def _export_overlay(report: Report, github_file: str, code: int) -> int:
    """--github-env: the proven overlay into $GITHUB_ENV; exit 2 at least when that fails."""
    from vkdoctor.model import githubenv

    try:
        click.echo(githubenv.export_overlay(report.overlay, github_file), err=True)
    except githubenv.GithubEnvError as exc:
        common.err(f"vkdoctor: {exc}")
        code = max(code, 2)
    return code
