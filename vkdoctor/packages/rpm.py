"""rpm: one `rpm -qa --qf` for every package's fields, one batched `rpm -qf` for file owners.

The database is a binary (sqlite/ndb/bdb) file, so the tool is needed. `--root` takes the tree;
`rpm -qf` then wants paths inside the tree. rpm opens a tree's database for writing even to
query it (sqlite makes its -wal and -shm files beside it), and the tree is never written: rpm is
given a private copy of the database (`private_db`), through a `--dbpath` that climbs out of
the tree (rpm puts the root in front of it).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.record import replace
from vkdoctor.packages import scratch
from vkdoctor.packages.deps import unmet
from vkdoctor.packages.model import Consistency, Family, Package, PackageDBError, Relation
from vkdoctor.packages.paths import resolve_in_root, spellings
from vkdoctor.packages.proc import ToolRun, run_tool, which
from vkdoctor.packages.versions import rpm_compare

#: where rpm keeps its database (Fedora >= 36 first), and the files that mark a real one
DBPATHS = ("/usr/lib/sysimage/rpm", "/var/lib/rpm")
DBFILES = ("rpmdb.sqlite", "Packages.db", "Packages")

_QF = (
    "P\\t%{NAME}\\t%{EPOCH}\\t%{VERSION}\\t%{RELEASE}\\t%{ARCH}\\t%{SOURCERPM}\\t%{VENDOR}\\t%{PACKAGER}\\n"
    "[R\\t%{REQUIRENAME}\\t%{REQUIREFLAGS:depflags}\\t%{REQUIREVERSION}\\n]"
    "[V\\t%{PROVIDENAME}\\t%{PROVIDEFLAGS:depflags}\\t%{PROVIDEVERSION}\\n]"
)
_OWNER_QF = "%{NAME}\\t%{ARCH}\\t%{EPOCH}\\t%{VERSION}\\t%{RELEASE}\\n"
_NOT_OWNED = re.compile(r"^file (.+) is not owned by any package$")


def find_dbpath(ctx: Context) -> str | None:
    """Where the rpm database is, with a tree's links followed inside the tree: rpm --root
    follows them on this machine, where an absolute link leads to this machine's database."""
    for d in DBPATHS:
        if any(ctx.resolve(f"{d}/{f}").is_file() for f in DBFILES):
            return d if ctx.live else resolve_in_root(ctx, d)
    return None


#: what a tree's rpm database may hold before it is not copied (a full Fedora's: ~200 MiB)
DB_BOUND = 1 << 30
#: the files of a database directory copied at most (bdb's: about 20)
_DB_FILES = 64


def private_db(ctx: Context, dbpath: str) -> Path:
    """This process's copy of the tree's rpm database at `dbpath` (resolved inside the tree):
    its regular files only, each opened without following a link or blocking, within
    `DB_BOUND` in all (sqlite's shared-memory index and rpm's lock are rebuilt, not copied).
    OSError when the tree's database cannot be copied so."""
    path, new = scratch.directory(f"rpm {ctx.root} {dbpath}", "vkdoctor-rpm-")
    if new:
        try:
            _copy_db(ctx.under(dbpath), path)
        except OSError:
            scratch.forget(path)
            raise
    return path


def _copy_db(source: Path, dest: Path) -> None:
    with os.scandir(source) as it:
        entries = sorted(e.name for e in it)
    names = [n for n in entries if not n.endswith("-shm") and n not in (".rpm.lock", ".dbenv.lock")]
    if len(names) > _DB_FILES:
        raise OSError(errno.EFBIG, f"more than {_DB_FILES} files", str(source))
    left = DB_BOUND
    for name in names:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(source / name, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link: not part of a database rpm made
                continue
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            left -= st.st_size
            if left < 0:
                raise OSError(errno.EFBIG, f"larger than {DB_BOUND >> 20} MiB", str(source))
            with open(dest / name, "wb") as out:
                done = 0
                while done < st.st_size:
                    sent = os.sendfile(out.fileno(), fd, done, st.st_size - done)
                    if sent == 0:
                        break
                    done += sent
        finally:
            os.close(fd)


def _climb(root: Path, host: Path) -> str:
    """A --dbpath that leads from `root` (which rpm puts in front of it) to `host`."""
    depth = len(Path(os.path.realpath(root)).parts)
    return "/" + "../" * depth + str(host).lstrip("/")


def _none(value: str) -> str | None:
    return None if value in ("(none)", "") else value


def evr(epoch: str | None, version: str, release: str) -> str:
    e = f"{epoch}:" if epoch and epoch != "0" else ""
    return f"{e}{version}-{release}"


def split_srpm(srpm: str, fallback: str) -> tuple[str, str]:
    """`mesa-26.2.3-1.fc43.src.rpm` -> (`mesa`, `26.2.3-1.fc43`)."""
    base = srpm.removesuffix(".rpm").removesuffix(".src").removesuffix(".nosrc")
    parts = base.rsplit("-", 2)
    if len(parts) != 3:
        return fallback, ""
    return parts[0], f"{parts[1]}-{parts[2]}"


def parse_qa(text: str) -> tuple[Package, ...]:
    """The records of `rpm -qa --qf _QF`."""
    pkgs: list[Package] = []
    head: list[str] | None = None
    reqs: list[Relation] = []
    provs: list[Relation] = []

    def flush() -> None:
        if head is None:
            return
        name, epoch, version, release, arch, srpm, vendor, packager = head[:8]
        source, source_version = split_srpm(srpm, name)
        full = evr(_none(epoch), version, release)
        pkgs.append(
            Package(
                family="rpm",
                name=name,
                version=full,
                arch=_none(arch) or "",
                source=source,
                source_version=source_version or full,
                depends=tuple((r,) for r in reqs),
                provides=tuple(provs),
                packager=_none(packager),
                vendor=_none(vendor),
            )
        )

    for line in text.splitlines():
        fields = line.split("\t")
        if fields[0] == "P" and len(fields) >= 9:
            flush()
            head, reqs, provs = fields[1:9], [], []
        elif fields[0] in ("R", "V") and len(fields) >= 2 and head is not None:
            op = fields[2].strip() if len(fields) > 2 else ""
            ver = fields[3].strip() if len(fields) > 3 else ""
            rel = Relation(name=fields[1], op=op or None, version=ver or None)
            (reqs if fields[0] == "R" else provs).append(rel)
    flush()
    return tuple(pkgs)


#: where dnf's versionlock plugin (dnf 4) and dnf5 keep their locks
VERSIONLOCK_LIST = "/etc/dnf/plugins/versionlock.list"
VERSIONLOCK_TOML = "/etc/dnf/versionlock.toml"


def versionlocks(ctx: Context) -> list[tuple[str, str | None, str]]:
    """(pattern, evr, file) of each lock: a NEVRA glob from dnf 4's list (evr None), or a
    package name glob and the version it is locked to from dnf5's TOML file."""
    locks: list[tuple[str, str | None, str]] = []
    try:
        text = tree.read_text(ctx, VERSIONLOCK_LIST)
    except OSError:
        text = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith(("#", "!")):  # "!" lines exclude versions instead
            locks.append((line, None, VERSIONLOCK_LIST))
    doc: dict[str, Any] = {}
    try:
        text = tree.read_text(ctx, VERSIONLOCK_TOML)
    except (OSError, UnicodeDecodeError):
        text = ""
    if text:
        import tomllib  # only where a dnf5 lock file exists: 4 ms of imports otherwise

        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            doc = {}
    for entry in doc.get("packages", []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        evr = next(
            (
                str(c.get("value"))
                for c in entry.get("conditions", [])
                if isinstance(c, dict) and c.get("key") == "evr" and c.get("comparator") == "="
            ),
            None,
        )
        locks.append((entry["name"], evr, VERSIONLOCK_TOML))
    return locks


def _locked(pkg: Package, locks: list[tuple[str, str | None, str]]) -> str | None:
    evr = pkg.version if ":" in pkg.version else f"0:{pkg.version}"
    # dnf writes name-epoch:version-release.arch; a hand-written lock may leave epoch 0 out
    nevras = [f"{pkg.name}-{evr}.{pkg.arch}"]
    if evr.startswith("0:"):
        nevras.append(f"{pkg.name}-{evr[2:]}.{pkg.arch}")
    for pattern, locked_evr, where in locks:
        if locked_evr is None:
            if any(fnmatch.fnmatchcase(n, pattern) for n in nevras):
                return f"dnf versionlock {pattern} in {where}"
        elif fnmatch.fnmatchcase(pkg.name, pattern) and locked_evr in (pkg.version, evr):
            return f"dnf versionlock of {pkg.name} at {locked_evr} in {where}"
    return None


def parse_dnf_check(text: str) -> list[str]:
    """The problem lines of `dnf check` (dnf 4 and dnf5 print one per problem)."""
    keys = (" has missing requires of ", " has installed conflict ", " is a duplicate with ")
    return [ln.strip() for ln in text.splitlines() if any(k in ln for k in keys)]


def parse_rpm_verify(text: str) -> list[str]:
    """The unsatisfied dependencies in `rpm -Va --nofiles` output."""
    problems: list[str] = []
    current = False
    for line in text.splitlines():
        if line.startswith("Unsatisfied dependencies for "):
            current = True
        elif line.startswith(("\t", " ")) and current:
            problems.append(line.strip())
        else:
            current = False
    return problems


class RpmDB:
    """The rpm database of `ctx.root` at `dbpath` (inside the tree)."""

    family: Family = "rpm"

    def __init__(self, ctx: Context, dbpath: str) -> None:
        self._ctx = ctx
        self.db_path = dbpath
        self._packages: tuple[Package, ...] | None = None
        self.runs: list[ToolRun] = []

    def _argv(self, *args: str) -> list[str]:
        """rpm's command line; OSError when a tree's database cannot be copied."""
        if self._ctx.live:
            return ["rpm", "--dbpath", self.db_path, *args]
        copy = private_db(self._ctx, self.db_path)
        root = str(self._ctx.root)
        return ["rpm", "--root", root, "--dbpath", _climb(self._ctx.root, copy), *args]

    def _run(self, *args: str) -> ToolRun:
        try:
            argv = self._argv(*args)
        except OSError as exc:
            where = self._ctx.under(self.db_path)
            why = f"the rpm database {where} is not copied: {exc.strerror or exc}"
            run = ToolRun(argv=("rpm", *args), returncode=None, problem=why)
        else:
            run = run_tool(argv, env=self._ctx.env, timeout=min(self._ctx.options.timeout, 60.0))
        self.runs.append(run)
        return run

    def packages(self) -> tuple[Package, ...]:
        if self._packages is None:
            run = self._run("-qa", "--qf", _QF)
            if run.returncode != 0:
                raise PackageDBError(
                    f"{run.command} failed: {run.problem or run.stderr.strip()[:300]}"
                )
            packages = parse_qa(run.stdout)
            locks = versionlocks(self._ctx)
            if locks:
                packages = tuple(replace(p, hold=_locked(p, locks)) for p in packages)
            self._packages = packages
        return self._packages

    def by_name(self, name: str) -> tuple[Package, ...]:
        return tuple(p for p in self.packages() if p.name == name)

    def _find(self, name: str, arch: str, epoch: str, version: str, release: str) -> Package | None:
        full = evr(_none(epoch), version, release)
        for p in self.packages():
            if p.name == name and p.version == full and p.arch == (_none(arch) or ""):
                return p
        return None

    def owners(self, paths: Iterable[str]) -> dict[str, tuple[Package, ...]]:
        """One `rpm -qf` for all paths; rpm resolves symlinked directories itself."""
        wanted = [p for p in dict.fromkeys(paths) if self._ctx.under(p).exists()]
        if not wanted:
            return {}
        queried = {p: resolve_in_root(self._ctx, p, last=False) for p in wanted}
        run = self._run("-qf", "--qf", _OWNER_QF, *queried.values())
        lines = run.stdout.splitlines()
        not_owned = {m.group(1) for m in map(_NOT_OWNED.match, lines) if m}
        owner_lines = [ln for ln in lines if not _NOT_OWNED.match(ln) and ln.count("\t") == 4]
        owned = [p for p in wanted if queried[p] not in not_owned]
        out: dict[str, tuple[Package, ...]] = {}
        if len(owner_lines) == len(owned):
            for path, line in zip(owned, owner_lines, strict=True):
                pkg = self._find(*line.split("\t"))
                if pkg is not None:
                    out[path] = (pkg,)
            return out
        # some file has several owners: ask per file (rare: shared multilib files)
        for path in owned:
            one = self._run("-qf", "--qf", _OWNER_QF, queried[path])
            found = [
                self._find(*ln.split("\t")) for ln in one.stdout.splitlines() if ln.count("\t") == 4
            ]
            pkgs = tuple(p for p in found if p is not None)
            if pkgs:
                out[path] = pkgs
        return out

    def modified(self, pkg: Package, path: str) -> bool | None:
        # rpm -V prints one line per file that differs: 9 flags ('5': the digest) and the path
        label = f"{pkg.name}-{pkg.version}.{pkg.arch}"
        if not self._ctx.live and self._unhashable(label):
            return None
        run = self._run("-V", "--nodeps", "--noscripts", "--nosignature", label)
        if run.returncode is None or run.returncode not in (0, 1):
            return None
        differs = {
            line[line.index(" /") + 1 :]
            for line in run.stdout.splitlines()
            if line[2:3] == "5" and " /" in line
        }
        return any(s in differs for s in spellings(self._ctx, path))

    def _unhashable(self, label: str) -> bool:
        """Whether rpm -V must not run on a tree's files of package `label`: rpm opens each
        with links followed on this machine, so each is judged inside the tree first
        (vkdoctor.model.tree, as dpkg --verify's are): one that leads out of the tree, is no
        regular file, or files too large to hash in seconds, and rpm is not run."""
        listed = self._run("-ql", label)
        if listed.returncode != 0:
            return True
        total = 0
        for path in listed.stdout.splitlines():
            why, size = tree.judge(self._ctx, path, "rpm") if path.startswith("/") else (None, 0)
            total += size
            if why or total > tree.HASH_BUDGET:
                return True
        return False

    def compare(self, a: str, b: str) -> int:
        return rpm_compare(a, b)

    def lists_date(self) -> float | None:
        """When dnf last downloaded an enabled repository's metadata."""
        from vkdoctor.packages.dnfrepos import lists_date

        return lists_date(self._ctx)

    def candidates(self, names: Iterable[str]) -> dict[str, str | None] | None:
        """The newest version dnf's cached metadata offer for each name (as of the last
        download, `dnf makecache`), None for a name none offers; None without metadata."""
        from vkdoctor.packages.dnfrepos import offered

        wanted = list(dict.fromkeys(names))
        arches = {p.arch for n in wanted for p in self.by_name(n) if p.arch}
        arches.add(self._ctx.machine)
        return offered(self._ctx, wanted, arches)

    def prefetch(self) -> None:
        """Nothing to start: rpm -Va runs only when the parsed database shows a problem."""

    def consistency(self) -> Consistency:
        missing = tuple(str(u) for u in unmet(self))
        if not missing:
            return Consistency(family="rpm", problems=(), runs=())
        run = self._run("-Va", "--nofiles", "--noscripts")
        problems = parse_rpm_verify(run.stdout)
        runs = [run]
        if self._ctx.live and which("dnf", self._ctx.env):
            dnf = run_tool(
                ["dnf", "-q", "-C", "check"],
                env=self._ctx.env,
                timeout=min(self._ctx.options.timeout, 60.0),
            )
            runs.append(dnf)
            problems += [f"dnf check: {p}" for p in parse_dnf_check(dnf.stdout + dnf.stderr)]
        unavailable = run.problem if run.returncode is None else None
        return Consistency(
            family="rpm",
            problems=tuple(problems),
            runs=tuple(runs),
            unavailable=unavailable,
            unmet=missing,
        )
