"""VKH: facts about the host that decide what else can work."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Mapping

from vkdoctor import facts as run_facts
from vkdoctor.checks.base import Check
from vkdoctor.model import Finding, Remedy
from vkdoctor.model.context import Context
from vkdoctor.model.record import to_json


class HostFacts(Check):
    """The host vkdoctor inspected: distro, kernel, architecture, CPU, memory, Python, wgpu.

    Informational. It is the context for every other finding: a report pasted into an issue
    should say which distribution and versions it came from.
    """

    code = "VKH001"
    family = "host"
    title = "Host"
    # a tree that lost its /lib link also loses the file lists' spelling of every library
    # there: the "files no package owns" that follow are that one cause
    explains = ("VKP004",)

    def explained(self, symptom: Finding, cause: Finding) -> bool:
        return "interpreter" in cause.evidence

    def run(self, ctx: Context) -> Iterable[Finding]:
        host = run_facts.host_description(ctx)
        parts = [
            host.distro.name or host.distro.id or "unknown distribution",
            f"kernel {host.kernel}" if host.kernel else None,
            host.machine,
        ]
        if ctx.live:
            parts.append(f"Python {host.python}")
            parts.append(f"wgpu {host.wgpu}" if host.wgpu else "wgpu not installed")
        else:
            parts.append(f"inspected as a tree under --root {ctx.root}")
        yield self.info("Host", ", ".join(p for p in parts if p), **to_json(host))
        if not ctx.live and _looks_like_a_root(ctx):
            yield from _interpreter(self, ctx)
        applied = [] if ctx.live else applied_variables(ctx.env, _layer_switches(ctx))
        if applied:
            yield self.info(
                f"This shell's {', '.join(applied)} applied to the tree",
                f"vkdoctor reads them as the environment of a program started in {ctx.root}: "
                "the findings describe that program, not the image's own environment. For the "
                "image alone, run with only its variables: env -i PATH=/usr/bin:/bin "
                f"{shlex.quote(sys.executable)} -m vkdoctor check --root {ctx.root} (add the "
                "image's own ENV settings).",
                variables=applied,
            )
        if not ctx.live and not _looks_like_a_root(ctx):
            yield self.warn(
                f"{ctx.root} does not look like a root filesystem",
                f"{ctx.root} has no /etc/os-release, /usr/lib/os-release or /usr: the findings "
                "below describe an empty tree (no loader, no drivers) rather than a system.",
                remedy=Remedy(
                    text="Give --root the top of an unpacked image or chroot (the directory that "
                    "holds usr/ and etc/): for a container image, its merged filesystem "
                    "(docker export, or podman mount), not one layer."
                ),
                root=str(ctx.root),
            )


#: the variables whose values change what the loader and ld.so find (HOME is always set and
#: only adds per-user directories: not worth a line)
_TREE_VARIABLES = ("VK_", "LD_", "WGPU", "XDG_")


def applied_variables(env: Mapping[str, str], switches: Iterable[str] = ()) -> list[str]:
    """The set variables that change what vkdoctor finds in a tree: the loader's and ld.so's,
    and the implicit layers' own enable/disable variables (NODEVICE_SELECT)."""
    extra = set(switches)
    return sorted(k for k in env if k.startswith(_TREE_VARIABLES) or k in extra)


def _layer_switches(ctx: Context) -> set[str]:
    try:
        layers = run_facts.layer_scan(ctx).layers
    except Exception:  # the VKI checks report a scan that fails
        return set()
    return {v for layer in layers for v in (layer.enable_env, layer.disable_env) if v}


def _interpreter(check: Check, ctx: Context) -> Iterable[Finding]:
    """A tree whose dynamic linker is gone (a deleted file, a merged-/usr tree without its /lib
    link) can start no program, whatever its libraries say."""
    from vkdoctor.elf.platform import INTERPRETERS

    interpreter = INTERPRETERS.get(ctx.machine)
    if interpreter is None or ctx.resolve(interpreter).is_file():
        return
    dirs = run_facts.ldso_platform(ctx).system_dirs
    if not any(ctx.resolve(f"{d}/libc.so.6").is_file() for d in dirs):
        return  # no glibc: a static or partial tree, nothing that needs ld.so to judge
    try:
        target = str(ctx.under(interpreter).readlink())
        why = f"{interpreter} is a link to {target}, which does not exist in the tree"
    except OSError:
        why = f"{interpreter} does not exist in the tree"
    # a merged-/usr tree whose top-level links were lost (an archive that dropped them)
    unlinked = [
        d
        for d in ("/lib", "/lib64", "/bin", "/sbin")
        if not ctx.under(d).exists()
        and not ctx.under(d).is_symlink()
        and ctx.under(f"/usr{d}").is_dir()
    ]
    if unlinked:
        why += f"; {', '.join(unlinked)} {'is' if len(unlinked) == 1 else 'are'} missing"
    from vkdoctor.packages import commands  # only here: a replayed run runs this check again

    yield check.fail(
        f"The tree's dynamic linker {interpreter} is missing: no program in it can start",
        f"{why}. Every {ctx.machine} program and library in {ctx.root} needs it, so nothing "
        "in the tree can load, whatever the library findings below say.",
        remedy=Remedy(
            commands=tuple(f"ln -s usr{d} {shlex.quote(f'{ctx.root}{d}')}" for d in unlinked),
            text="(the merged-/usr links)",
        )
        if unlinked
        else Remedy(
            text="reinstall the C library package inside the tree ("
            + "; ".join(
                f"{d}: {commands.reinstall(f, commands.PACKAGES['libc'][f])}"
                for d, f in (("Debian", "dpkg"), ("Arch", "pacman"), ("Fedora", "rpm"))
            )
            + ")"
        ),
        interpreter=interpreter,
    )


def _looks_like_a_root(ctx: Context) -> bool:
    return any(ctx.under(p).exists() for p in ("/etc/os-release", "/usr/lib/os-release", "/usr"))


CHECKS: tuple[type[Check], ...] = (HostFacts,)
