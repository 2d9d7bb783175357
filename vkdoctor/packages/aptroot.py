"""The host's apt pointed at a --root tree's DATA, with a configuration vkdoctor writes.

apt reads APT_CONFIG first, then every file of Dir::Etc::parts and Dir::Etc::main, and runs
what that configuration names (Dir::Bin::dpkg with DPkg::Options, to ask dpkg for the foreign
architectures; the Invoke hooks; Dir::Bin::methods and solvers). A tree's /etc/apt is written by
whoever made the image, so none of it is read: APT_CONFIG is a file of this run that points both
at empty places of its own and pins the programs to the host's. From the tree apt takes only
data: the dpkg status, its architectures (var/lib/dpkg/arch and the dpkg package's own, passed
as APT::Architecture(s), so apt never asks a dpkg), its sources, preferences and package lists.
apt's binary caches go to the private directory too (the tree is never written).

A source's URI scheme is the name of the download method apt starts (Dir::Bin::methods joined
with the scheme, `..` and all), and apt-get -s starts the methods of the packages it would
fetch: a tree whose sources name a scheme other than apt's own gets no sources at all, and
its fixes are not simulated (`unsafe_source` says why).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.files import LARGE, read_text
from vkdoctor.packages import scratch
from vkdoctor.packages.proc import run_tool, which

#: a Debian architecture name (dpkg's arch.c: lower-case letters, digits and '-')
_ARCH = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
#: the download methods apt ships (/usr/lib/apt/methods), by the URI schemes that name them
#: (not mirror+: a mirror list names further URIs, read by the method, not by this check)
_SCHEME = re.compile(r"^(?:tor\+)?(?:https?|ftp|file|copy|cdrom)$")
#: what a quoted value of apt's configuration cannot hold
_UNQUOTABLE = re.compile(r'["\x00-\x1f\x7f]')
#: root -> why its sources are not handed to apt ("" when they are), for this run
_UNSAFE: dict[str, str] = {}


def _inside(root: Path, path: str) -> Path:
    """`path` of the tree with its links followed inside the tree (an absolute link followed on
    this machine would lead to this machine's file, such as its dpkg database)."""
    return Context(root=root).resolve(path)


def architectures(root: Path) -> tuple[str, list[str]]:
    """The tree's native architecture (its dpkg package's, else its packages' most common) and
    its foreign ones (dpkg's `arch`
    file, which --add-architecture writes), as data; `("", [])` when the tree does not say."""
    native = ""
    try:
        status = read_text(_inside(root, "/var/lib/dpkg/status"), LARGE)
    except OSError:
        status = ""
    m = re.search(r"^Package: dpkg\n(?:[^\n]+\n)*?Architecture: (\S+)$", status, re.M)
    if m and _ARCH.match(m.group(1)):
        native = m.group(1)
    else:
        # a tree without dpkg: the architecture most of its packages are built for
        counts = Counter(a for a in re.findall(r"^Architecture: (\S+)$", status, re.M))
        counts.pop("all", None)
        native = next((a for a, _ in counts.most_common() if _ARCH.match(a)), "")
    try:
        listed = read_text(_inside(root, "/var/lib/dpkg/arch"), 64 * 1024).split()
    except OSError:
        listed = []
    foreign = [a for a in dict.fromkeys(listed) if _ARCH.match(a) and a not in (native, "all")]
    return native, foreign


def unsafe_source(root: Path) -> str | None:
    """Why the tree's sources cannot be handed to apt (a URI whose scheme is no method apt
    ships names a program for apt to start), or None."""
    if str(root) not in _UNSAFE:
        _UNSAFE[str(root)] = _judge_sources(root) or ""
    return _UNSAFE[str(root)] or None


#: what apt reads of a tree besides its dpkg status: (apt's name for it, the tree's path,
#: a folder of files); each is handed to apt as the tree's path resolved inside the tree
_DATA = (
    ("Dir::State::lists", "/var/lib/apt/lists", True),
    ("Dir::State::extended_states", "/var/lib/apt/extended_states", False),
    ("Dir::Etc::sourcelist", "/etc/apt/sources.list", False),
    ("Dir::Etc::sourceparts", "/etc/apt/sources.list.d", True),
    ("Dir::Etc::preferences", "/etc/apt/preferences", False),
    ("Dir::Etc::preferencesparts", "/etc/apt/preferences.d", True),
)


def _judge_data(root: Path) -> str | None:
    """Why apt must not be given the tree's data (None: it may): apt opens each file with
    links followed on this machine, so each is judged inside the tree first (vkdoctor.model.
    tree.judge), and a package list must be within the read bound."""
    ctx = Context(root=root)
    for _, path, folder in _DATA:
        real = ctx.resolve(path)
        if _UNQUOTABLE.search(str(real)):
            return f"the tree's {path} leads to a path apt's configuration cannot hold"
        why, _ = tree.judge(ctx, ctx.inside(real), "apt", shown=path)
        if why or not folder:
            if why:
                return f"the tree's {why}"
            continue
        try:
            names = tree.names(ctx, path, tree.NAMES + 1)
        except OSError:
            continue
        if len(names) > tree.NAMES:
            return f"the tree's {path} holds more than {tree.NAMES} files"
        for name in names:
            why, size = tree.judge(ctx, f"{ctx.inside(real)}/{name}", "apt", shown=f"{path}/{name}")
            if why:
                return f"the tree's {why}"
            if size > LARGE:
                return f"the tree's {path}/{name} is larger than {LARGE >> 20} MiB"
    return None


def _judge_sources(root: Path) -> str | None:
    if _UNQUOTABLE.search(str(root)):
        return (
            "the tree's path holds a quote or a control character, which apt's configuration cannot"
        )
    if why := _judge_data(root):
        return why
    import tempfile

    env = {"PATH": "/usr/bin:/bin"}
    if not which("apt-get", env):
        return None
    with tempfile.TemporaryDirectory(prefix="vkdoctor-apt-") as tmp:
        conf = Path(tmp) / "apt.conf"
        conf.write_text(configuration(root, Path(tmp), sources=True), encoding="utf-8")
        # apt's own reading of the sources, both formats; it starts no method
        argv = ["apt-get", "indextargets", "--no-release-info", "--format", "$(REPO_URI)"]
        run = run_tool(argv, env={**env, "APT_CONFIG": str(conf)}, timeout=60.0)
    if run.returncode != 0:
        said = (run.stderr.strip().splitlines() or [run.problem or "no reason given"])[0]
        return f"apt cannot read them ({said[:200]})"
    for uri in dict.fromkeys(run.stdout.split()):
        scheme = uri.partition(":")[0]
        if not _SCHEME.match(scheme):
            return f"a source names {scheme!r}, which is no download method apt ships"
    return None


def configuration(root: Path, private: Path, *, sources: bool = False) -> str:
    """The whole apt configuration for a look at `root`: its data, nothing it configures; its
    sources only when told, or when `unsafe_source` finds nothing wrong with them."""
    (private / "parts").mkdir(exist_ok=True)
    (private / "empty.conf").write_text("", encoding="utf-8")
    if _UNQUOTABLE.search(str(root)):
        root = private / "no-tree"  # apt is shown nothing rather than a path it would misread
    native, foreign = architectures(root)
    lines = [
        f'Dir "{root}/";',
        f'Dir::Etc::main "{private}/empty.conf";',
        f'Dir::Etc::parts "{private}/parts/";',
        f'Dir::State::status "{_inside(root, "/var/lib/dpkg/status")}";',
        f'Dir::Cache "{private}/";',
        'Dir::Cache::archives "archives/";',
        'Dir::Cache::pkgcache "";',
        'Dir::Cache::srcpkgcache "srcpkgcache.bin";',
        f'Dir::Log "{private}/log/";',
        'Dir::Bin::dpkg "/usr/bin/dpkg";',
        'Dir::Bin::methods "/usr/lib/apt/methods/";',
        'Dir::Bin::solvers { "/usr/lib/apt/solvers/"; };',
        'Dir::Bin::planners { "/usr/lib/apt/planners/"; };',
        'APT::Solver "internal";',
        'Debug::NoLocking "1";',
    ]
    if not sources and unsafe_source(root):
        (private / "sources.list").write_text("", encoding="utf-8")
        lines += [
            f'Dir::State::lists "{private}/parts/";',
            f'Dir::Etc::sourcelist "{private}/sources.list";',
            f'Dir::Etc::sourceparts "{private}/parts/";',
            f'Dir::Etc::preferences "{private}/empty.conf";',
            f'Dir::Etc::preferencesparts "{private}/parts/";',
        ]
    else:
        for name, path, folder in _DATA:
            real = str(_inside(root, path)) + ("/" if folder else "")
            empty = f"{private}/parts/" if folder else f"{private}/empty.conf"
            lines.append(f'{name} "{empty if _UNQUOTABLE.search(real) else real}";')
    if native:
        archs = " ".join(f'"{a}";' for a in [native, *foreign])
        lines += [f'APT::Architecture "{native}";', f"APT::Architectures {{ {archs} }};"]
    return "\n".join(lines) + "\n"


def _private(root: str) -> Path:
    """This run's apt directory for `root`: the config file and the caches."""
    path, new = scratch.directory(f"apt {root}", "vkdoctor-apt-")
    if new:
        (path / "apt.conf").write_text(configuration(Path(root), path), encoding="utf-8")
        (path / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    return path


def apt_env(ctx: Context) -> Mapping[str, str]:
    """The environment an apt tool runs with to look at `ctx`'s tree (or the live machine)."""
    if ctx.live:
        return ctx.env
    return {**ctx.env, "APT_CONFIG": str(_private(str(ctx.root)) / "apt.conf")}
