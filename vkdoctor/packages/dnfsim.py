"""A dnf fix is checked by dnf itself (`dnf --assumeno`) before it is printed.

dnf 4 puts its cache, log and history under `--installroot`, so it is never pointed at the tree
itself: it runs in a private installroot whose rpm database is the tree's (a link to its
directory), whose repositories are copies of the tree's `.repo` files and whose metadata cache
links to the tree's (`-C`: the metadata as dnf last downloaded them; nothing is fetched). rpm's
`%_dbpath` is set to the tree's database path (Debian's rpm keeps it in ~/.rpmdb). dnf resolves
the transaction and stops: `--assumeno`.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.files import SMALL
from vkdoctor.packages.dnfrepos import CACHE_DIRS, caches
from vkdoctor.packages.proc import ToolRun, run_tool, which
from vkdoctor.packages.rpm import RpmDB, private_db
from vkdoctor.packages.simulate import Simulation, simulated, tree_of, unsimulated

#: the Vulkan loader's package on Fedora
LOADER_PACKAGES = ("vulkan-loader",)
TOOL = "dnf --assumeno"
_ACTIONS = {"distro-sync", "reinstall", "install", "upgrade", "downgrade", "update"}
_SECTION = re.compile(r"^(Installing|Upgrading|Downgrading|Reinstalling|Removing)\b[^:]*:$")
#: the files of a folder of the tree copied at most
_FOLDER_FILES = 256
_REPLACING = re.compile(r"^\s+replacing\s+(\S+)\s+(\S+)")
_ROW = re.compile(r"^ (\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+")


def parse_transaction(text: str) -> tuple[list[str], list[str]]:
    """dnf's transaction table: (installs, removes) as `name version`; a package another
    obsoletes ("replacing NAME.ARCH VERSION" under it) is removed."""
    installs: list[str] = []
    removes: list[str] = []
    section: str | None = None
    for line in text.splitlines():
        if m := _REPLACING.match(line):
            # an obsoleting package takes the other's place: that one is removed
            removes.append(f"{m.group(1).rsplit('.', 1)[0]} {m.group(2)}")
        elif m := _SECTION.match(line):
            section = m.group(1)
        elif not line.startswith(" "):
            section = None
        elif section and (row := _ROW.match(line)):
            name, version = row.group(1), row.group(3)
            (removes if section == "Removing" else installs).append(f"{name} {version}")
    return installs, removes


def _error(run: ToolRun) -> str:
    if run.problem:
        return f"fails ({run.problem})"
    text = run.stdout + "\n" + run.stderr
    problems = [ln.strip(" -") for ln in text.splitlines() if ln.startswith("  - ")]
    errors = [ln[len("Error: ") :] for ln in text.splitlines() if ln.startswith("Error: ")]
    shown = "; ".join([*problems[:2], *[e for e in errors if e][:1]]) or text.strip()[-300:]
    return f"fails (exit {run.returncode}" + (f": {shown})" if shown else ")")


def _releasever(ctx: Context) -> str | None:
    try:
        text = tree.read_text(ctx, "/etc/os-release")
    except OSError:
        return None
    m = re.search(r'^VERSION_ID="?([\w.]+)"?$', text, re.M)
    return m.group(1) if m else None


def _copy_folder(ctx: Context, folder: str, private: Path) -> None:
    """The regular files of the tree's `folder` into the private installroot, each read within
    the read bound with its links followed inside the tree (never on this machine): a device, a
    FIFO or a file too large is left out, so a link to /dev/zero cannot fill the disk."""
    out = private / folder.lstrip("/")
    try:
        names = tree.names(ctx, folder)
    except OSError:
        return
    out.mkdir(parents=True, exist_ok=True)
    for name in names[:_FOLDER_FILES]:
        try:
            data = tree.read_bytes(ctx, f"{folder}/{name}", SMALL)
        except OSError:
            continue
        (out / name).write_bytes(data)


def _cache_trap(ctx: Context) -> str | None:
    """Why dnf must not be given the tree's metadata (None: it may): dnf opens the files of a
    repository's cache with links followed on this machine, and a FIFO there blocks it."""
    for cache in caches(ctx):
        base = next(b for b in CACHE_DIRS if cache.repomd.startswith(b + "/"))
        entry = cache.repomd[len(base) + 1 :].split("/", 1)[0]
        folder = f"{base}/{entry}/repodata"
        try:
            names = tree.names(ctx, folder)
        except OSError:
            continue
        for name in names:
            why = tree.judge(ctx, f"{folder}/{name}", "dnf")[0]
            if why:
                return why
    return None


def _installroot(ctx: Context, db: RpmDB, private: Path) -> None:
    """The private installroot: the rpm database (a tree's: its private copy, which rpm may
    write), the tree's repositories and cache, linked. OSError when the database cannot be
    copied."""
    dbdir = private / db.db_path.lstrip("/")
    dbdir.parent.mkdir(parents=True)
    dbdir.symlink_to(ctx.resolve(db.db_path) if ctx.live else private_db(ctx, db.db_path))
    for folder in ("/etc/yum.repos.d", "/etc/dnf/vars"):
        _copy_folder(ctx, folder, private)
    for cache in caches(ctx):
        base = next(b for b in CACHE_DIRS if cache.repomd.startswith(b + "/"))
        entry = cache.repomd[len(base) + 1 :].split("/", 1)[0]
        link = private / "var/cache/dnf" / entry
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(ctx.resolve(f"{base}/{entry}"))
    home = private / "home"
    home.mkdir()
    (home / ".rpmmacros").write_text(f"%_dbpath {db.db_path}\n")


def simulate(ctx: Context, db: RpmDB, fix: str, protect: Sequence[str]) -> Simulation:
    """dnf --assumeno of every dnf step of `fix`; a step dnf refuses or that removes a package
    of `protect` rejects the fix."""
    tree = tree_of(ctx)
    if not which("dnf", ctx.env):
        return unsimulated(fix, "dnf is not installed on this machine", tool=TOOL, tree=tree)
    if not caches(ctx):
        why = "there is no dnf metadata to simulate with (dnf makecache never ran)"
        return unsimulated(fix, why, tool=TOOL, tree=tree)
    actions: list[list[str]] = []
    skipped: list[str] = []
    for part in fix.split("&&"):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and words[0] == "sudo":
            words = words[1:]
        if not words:
            continue
        if words[0] != "dnf":
            what = "advice in words, not a dnf command" if words[0][:1].isupper() else None
            why = f"the fix is {what}" if what else f"dnf cannot simulate `{' '.join(words)}`"
            return unsimulated(fix, why, tool=TOOL, tree=tree)
        if words[1:2] == ["makecache"]:
            skipped.append("dnf makecache (the metadata as last downloaded)")
        elif words[:3] == ["dnf", "versionlock", "delete"]:
            skipped.append("dnf versionlock delete (locks are not applied by the check)")
        elif words[0] == "dnf" and _ACTIONS.intersection(words[1:2]):
            actions.append(words[1:])
        else:
            why = f"dnf cannot simulate `{' '.join(words)}`"
            return unsimulated(fix, why, tool=TOOL, tree=tree)
    if not actions:
        return unsimulated(fix, "it holds no dnf step to simulate", tool=TOOL, tree=tree)
    if not ctx.live and (trap := _cache_trap(ctx)):
        return unsimulated(
            fix, f"the tree's dnf metadata is not used: {trap}", tool=TOOL, tree=tree
        )
    private = Path(tempfile.mkdtemp(prefix="vkdoctor-dnf-"))
    try:
        try:
            _installroot(ctx, db, private)
        except OSError as exc:
            why = f"the tree's rpm database is not copied ({exc.strerror or exc})"
            return unsimulated(fix, why, tool=TOOL, tree=tree)
        base = ["dnf", "--installroot", str(private), "-C", "--assumeno", "--disableplugin=*"]
        # reposdir is taken as given (the cache, log and history under the installroot)
        base.append(f"--setopt=reposdir={private / 'etc/yum.repos.d'}")
        if release := _releasever(ctx):
            base.append(f"--releasever={release}")
        env = {**ctx.env, "VKDOCTOR_HOME": str(private / "home")}
        commands: list[str] = []
        installs: list[str] = []
        removes: list[str] = []
        for args in actions:
            run = run_tool([*base, *args], env=env, timeout=min(ctx.options.timeout, 120.0))
            where = "" if ctx.live else f"--installroot {ctx.root} "
            commands.append(f"dnf {where}-C --assumeno {' '.join(args)}")
            said = run.stdout + run.stderr
            if "Operation aborted." not in said and "Nothing to do." not in said:
                return simulated(
                    fix,
                    tool=TOOL,
                    tree=tree,
                    commands=commands,
                    skipped=skipped,
                    refused=_error(run),
                )
            ins, rem = parse_transaction(run.stdout)
            installs += ins
            removes += rem
        if not installs and not removes:
            why = "changes nothing (dnf has nothing to do with the metadata as last downloaded)"
            return simulated(
                fix, tool=TOOL, tree=tree, commands=commands, skipped=skipped, refused=why
            )
        return simulated(
            fix,
            tool=TOOL,
            tree=tree,
            commands=commands,
            skipped=skipped,
            installs=installs,
            removes=removes,
            lost=[p.split()[0] for p in removes if p.split()[0] in protect],
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)
