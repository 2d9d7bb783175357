"""pacman: reads the local database (`local/NAME-VER/desc` and `files`) directly.

The desc files are locale-free, one value per line under `%FIELD%` headers; `files` lists paths
without the leading slash. Tools run only for `pacman -Dk` and, when sync databases exist,
`pacman -Qqm` (foreign packages), each once.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from vkdoctor.model import tree as tree_files
from vkdoctor.model.context import Context
from vkdoctor.model.files import SMALL, read_bytes
from vkdoctor.packages.model import Consistency, Family, Package, Relation
from vkdoctor.packages.paths import spellings
from vkdoctor.packages.proc import RunningTool, ToolRun, run_tool, start_tool
from vkdoctor.packages.versions import pacman_compare

DBPATH = "/var/lib/pacman"
#: the lines of `pacman -Dk` that are findings about the database (the rest are tool errors)
_DB_PROBLEM = re.compile(r"dependency for|conflicts with|missing file|database")
#: a repository name pacman.conf can hold as a [section] (what repo-add's names are made of);
#: a sync database named otherwise is not written into the configuration pacman is given
_REPO = re.compile(r"^[A-Za-z0-9@._+-]{1,128}$")
_REL = re.compile(r"^([^<>=:]+?)(?:(<=|>=|=|<|>)(.+))?(?::.*)?$")


#: libalpm reads its database with fgets into a 1024-byte buffer: a longer line is read as
#: pieces of 1023 bytes
_LINE = 1023
#: a file list larger than this is not indexed but scanned for the paths asked
INDEXED = 64 << 20


#: how the database's files are opened: never blocking (a FIFO), never through a link
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW


#: the entries of a tree's pacman database judged at most before pacman is run on it
_JUDGED = 500_000


def _database_trap(ctx: Context, db: Path) -> str | None:
    """Why pacman must not open the tree's database at `db` (resolved inside the tree): a
    package's entry in local/ that is not a folder of regular files (pacman makes no link
    there; a link leads pacman anywhere on this machine, a FIFO blocks it), or a sync database
    that vkdoctor.model.tree.judge refuses (repo-add links them to their archives)."""
    judged = 0
    for sub in ("local", "sync"):
        try:
            top = tree_files.names(ctx, ctx.inside(db / sub), _JUDGED)
        except OSError:
            continue
        for name in top:
            judged += 1
            if judged > _JUDGED:
                return f"its database holds more than {_JUDGED} files"
            entry = db / sub / name
            why = _sync_trap(ctx, entry) if sub == "sync" else _local_trap(ctx, entry)
            if why:
                return why
    return None


def _sync_trap(ctx: Context, entry: Path) -> str | None:
    return tree_files.judge(ctx, ctx.inside(entry), "pacman")[0]


def _local_trap(ctx: Context, entry: Path) -> str | None:
    try:
        inner = tree_files.names(ctx, ctx.inside(entry), 64) if entry.is_dir() else []
    except OSError:
        inner = []
    for path in (entry, *(entry / n for n in inner)):
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue  # gone meanwhile: pacman finds nothing there either
        if not (stat.S_ISREG(mode) or (path == entry and stat.S_ISDIR(mode))):
            return (
                f"{ctx.inside(path)} is not a regular file, and pacman would block or be led "
                "out of the tree reading it"
            )
    return None


def head(path: Path, limit: int) -> bytes:
    """At most the first `limit` bytes of the regular file at `path` (not a link to one: the
    database's folder is resolved inside the tree, and pacman makes no link in it)."""
    fd = os.open(path, _FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        chunks = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_list(path: Path, wanted: set[str] | None = None) -> list[str]:
    """The paths (no leading slash) a `local/NAME-VER/files` lists, read as libalpm reads
    them: line by line in pieces of at most 1023 bytes, each cut at its first NUL and stripped
    of its newlines; `%FILES%` runs to the first empty line or the end, a later `%FILES%`
    replaces an earlier one, `%BACKUP%` runs to an empty line. With `wanted`, only those paths
    are kept (memory stays bounded on a file list of any size)."""
    with os.fdopen(os.open(path, _FLAGS), "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        out: list[str] = []
        section: str | None = None
        while raw := f.readline(_LINE):
            line = raw.split(b"\0", 1)[0].rstrip(b"\n").decode("utf-8", "surrogateescape")
            if section is None:
                if line == "%FILES%":
                    section, out = "files", []
                elif line == "%BACKUP%":
                    section = "backup"
            elif not line:
                section = None
            elif section == "files" and (wanted is None or line.rstrip("/") in wanted):
                out.append(line)
        return out


def parse_desc(text: str) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    key: str | None = None
    for line in text.splitlines():
        if line.startswith("%") and line.endswith("%") and len(line) > 2:
            key = line[1:-1]
            fields[key] = []
        elif line and key is not None:
            fields[key].append(line)
        elif not line:
            key = None
    return fields


def parse_relation(text: str) -> Relation:
    """`libLLVM.so=23.1-64`, `llvm-libs>=23`, `python: for scripts` (optdepends)."""
    m = _REL.match(text.strip())
    if not m:
        return Relation(name=text.strip())
    return Relation(name=m.group(1).strip(), op=m.group(2), version=m.group(3))


def dbpath_from_conf(ctx: Context) -> str:
    """DBPath from the tree's /etc/pacman.conf, else the default."""
    try:
        text = tree_files.read_text(ctx, "/etc/pacman.conf")
    except OSError:
        return DBPATH
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "DBPath" and value.strip().startswith("/"):
            return value.strip().rstrip("/") or DBPATH
    return DBPATH


CONF = "/etc/pacman.conf"
#: Include nesting pacman-conf follows before it gives up
_MAX_INCLUDE_DEPTH = 10


def _options(
    ctx: Context, path: str, depth: int = 0, section: str | None = None
) -> list[tuple[str, str, str]]:
    """(key, value, file) of the [options] section of `path` and the files it includes, in
    order. An included file continues the section of its Include line."""
    try:
        text = tree_files.read_text(ctx, path)
    except OSError:
        return []
    out: list[tuple[str, str, str]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = (part.strip() for part in line.partition("="))
        if not sep or section not in ("options", None):
            continue
        if key == "Include" and value.startswith("/") and depth < _MAX_INCLUDE_DEPTH:
            for included in _included(ctx, value):
                out += _options(ctx, included, depth + 1, section)
        elif section == "options":
            out.append((key, value, path))
    return out


def _included(ctx: Context, pattern: str) -> list[str]:
    """The tree's files an Include line names: a glob in its last component (pacman's own,
    /etc/pacman.d/*.conf), matched in the folder as the tree has it."""
    folder, _, name = pattern.rpartition("/")
    if not glob.has_magic(name):
        return [pattern]
    try:
        names = tree_files.names(ctx, folder or "/")
    except OSError:
        return []
    return [f"{folder}/{n}" for n in names if fnmatch.fnmatchcase(n, name) and n[:1] != "."]


def configured_repos(ctx: Context) -> list[str]:
    """The [repository] sections of the tree's pacman.conf, in order (pacman asks them so)."""
    try:
        text = tree_files.read_text(ctx, CONF)
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if (
            line.startswith("[")
            and line.endswith("]")
            and line[1:-1] != "options"
            and _REPO.match(line[1:-1])
        ):
            out.append(line[1:-1])
    return out


def ignored(ctx: Context) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """IgnorePkg and IgnoreGroup of the tree's pacman.conf: (glob, the file that sets it) each."""
    pkgs: list[tuple[str, str]] = []
    groups: list[tuple[str, str]] = []
    for key, value, where in _options(ctx, CONF):
        if key in ("IgnorePkg", "IgnoreGroup"):
            (pkgs if key == "IgnorePkg" else groups).extend((v, where) for v in value.split())
    return pkgs, groups


def _hold(
    name: str,
    groups: Iterable[str],
    ignore: tuple[list[tuple[str, str]], list[tuple[str, str]]],
) -> str | None:
    for pattern, where in ignore[0]:
        if fnmatch.fnmatchcase(name, pattern):
            return f"IgnorePkg = {pattern} in {where}"
    for group in groups:
        for pattern, where in ignore[1]:
            if fnmatch.fnmatchcase(group, pattern):
                return f"IgnoreGroup = {pattern} in {where} (it is in group {group})"
    return None


class PacmanDB:
    """The pacman local database of `ctx.root`."""

    family: Family = "pacman"

    def __init__(self, ctx: Context, dbpath: str = DBPATH) -> None:
        self._ctx = ctx
        self.db_path = dbpath
        self._packages: tuple[Package, ...] | None = None
        self._dirs: dict[str, Package] = {}
        self._files: dict[str, list[Package]] | None = None
        #: file lists too large to index: (path, package), scanned per question
        self._large: list[tuple[Path, Package]] = []
        self._check: RunningTool | ToolRun | None = None
        self._trap: str | None = None

    @property
    def _local(self) -> Path:
        return self._ctx.resolve(self.db_path) / "local"  # the tree's links followed in it

    def packages(self) -> tuple[Package, ...]:
        if self._packages is None:
            pkgs = []
            seen: set[str] = set()
            ignore = ignored(self._ctx)
            for entry in sorted(self._local.iterdir()):
                # as libalpm: the name and version are the directory's (name-pkgver-pkgrel),
                # whatever desc says; desc, even cut short, only adds the other fields
                parts = entry.name.rsplit("-", 2)
                if len(parts) != 3 or not all(parts) or not entry.is_dir():
                    continue
                name, version = parts[0], f"{parts[1]}-{parts[2]}"
                if name in seen:  # libalpm drops a duplicated entry
                    continue
                seen.add(name)
                try:
                    fields = parse_desc(
                        head(entry / "desc", SMALL).decode("utf-8", "surrogateescape")
                    )
                except OSError:
                    fields = {}
                pkg = Package(
                    family="pacman",
                    name=name,
                    version=version,
                    arch=(fields.get("ARCH") or [""])[0],
                    source=(fields.get("BASE") or [name])[0],
                    source_version=version,
                    depends=tuple((parse_relation(d),) for d in fields.get("DEPENDS", [])),
                    provides=tuple(parse_relation(p) for p in fields.get("PROVIDES", [])),
                    packager=next(iter(fields.get("PACKAGER", [])), None),
                    hold=_hold(name, fields.get("GROUPS", []), ignore),
                )
                pkgs.append(pkg)
                self._dirs[entry.name] = pkg
            self._packages = tuple(pkgs)
        return self._packages

    def by_name(self, name: str) -> tuple[Package, ...]:
        return tuple(p for p in self.packages() if p.name == name)

    def _index(self) -> dict[str, list[Package]]:
        """Every file of every package whose file list is of a usual size; larger lists (only
        a damaged database has one) are scanned for the paths asked, in `owners`."""
        if self._files is None:
            self.packages()
            files: dict[str, list[Package]] = {}
            for dirname, pkg in self._dirs.items():
                path = self._local / dirname / "files"
                try:
                    if path.stat().st_size > INDEXED:
                        self._large.append((path, pkg))
                        continue
                    listed = file_list(path)
                except OSError:
                    continue  # libalpm: no file list, no files
                for line in listed:
                    files.setdefault("/" + line.rstrip("/"), []).append(pkg)
            self._files = files
        return self._files

    def owners(self, paths: Iterable[str]) -> dict[str, tuple[Package, ...]]:
        index = self._index()
        asked = {path: spellings(self._ctx, path) for path in paths}
        found: dict[str, list[Package]] = {}
        if self._large:
            wanted = {s for ss in asked.values() for s in ss}
            for listed, pkg in self._large:
                try:
                    for line in file_list(listed, wanted={w[1:] for w in wanted}):
                        found.setdefault("/" + line.rstrip("/"), []).append(pkg)
                except OSError:
                    continue
        out: dict[str, tuple[Package, ...]] = {}
        for path, names in asked.items():
            for spelling in names:
                pkgs = index.get(spelling, []) + found.get(spelling, [])
                if pkgs:
                    out[path] = tuple(dict.fromkeys(pkgs))  # a path listed twice: one owner
                    break
        return out

    def modified(self, pkg: Package, path: str) -> bool | None:
        from vkdoctor.packages.digests import file_digest, mtree_entry

        try:
            data = read_bytes(self._local / f"{pkg.name}-{pkg.version}" / "mtree", follow=False)
        except OSError:
            return None
        recorded = mtree_entry(data, spellings(self._ctx, path))
        if recorded is None:
            return None
        algorithm, digest = recorded
        actual = file_digest(self._ctx.under(path), algorithm)
        return None if actual is None else actual != digest

    def compare(self, a: str, b: str) -> int:
        return pacman_compare(a, b)

    def _argv(self, *args: str) -> list[str]:
        argv = ["pacman", "--config", "/dev/stdin"]
        if not self._ctx.live:
            argv += [
                "--root",
                str(self._ctx.root),
                "--dbpath",
                str(self._ctx.resolve(self.db_path)),
            ]
        return [*argv, *args]

    def trap(self) -> str | None:
        """Why pacman must not be run on the tree's database (None: it may; always on the live
        machine): pacman opens each of its files with links followed on this machine, and a
        FIFO or a device there blocks it."""
        if self._ctx.live:
            return None
        if self._trap is None:
            self._trap = _database_trap(self._ctx, self._ctx.resolve(self.db_path)) or ""
        return self._trap or None

    def _run(self, *args: str, stdin: str) -> ToolRun:
        trap = self.trap()
        if trap:
            return ToolRun(argv=tuple(self._argv(*args)), returncode=None, problem=trap)
        timeout = min(self._ctx.options.timeout, 60.0)
        return run_tool(self._argv(*args), env=self._ctx.env, timeout=timeout, stdin=stdin)

    def sync_repos(self) -> list[str]:
        """The repositories pacman asks, in pacman.conf's order, that have a sync database;
        every sync database, by name, when pacman.conf lists none (a bare tree)."""
        sync = self._ctx.under(self.db_path) / "sync"
        try:
            present = {p.name[: -len(".db")] for p in sync.glob("*.db")}
            present = {r for r in present if _REPO.match(r)}
        except OSError:
            return []
        configured = configured_repos(self._ctx)
        if configured:
            return [r for r in configured if r in present]
        return sorted(present)

    def _config(self, repos: Iterable[str] = ()) -> str:
        """A minimal config: the questions asked need no servers, hooks or the tree's includes."""
        return "[options]\n" + "".join(f"[{r}]\n" for r in repos)

    def foreign(self) -> tuple[frozenset[str], ToolRun] | None:
        """Names of installed packages found in no sync database (`pacman -Qm`), when sync DBs exist."""
        repos = self.sync_repos()
        if not repos:
            return None
        run = self._run("-Qqm", stdin=self._config(repos))
        if run.returncode not in (0, 1):
            return None
        return frozenset(run.stdout.split()), run

    def lists_date(self) -> float | None:
        """When the sync databases were last refreshed (pacman -Sy): the newest one's mtime."""
        sync = self._ctx.under(self.db_path) / "sync"
        try:
            return max((p.stat().st_mtime for p in sync.glob("*.db")), default=None)
        except OSError:
            return None

    def candidates(self, names: Iterable[str]) -> dict[str, str | None] | None:
        """The version the sync databases offer for each name (as of the last -Sy), None for a
        name none offers; None when there are no sync databases."""
        wanted = list(dict.fromkeys(names))
        repos = self.sync_repos()
        if not repos or not wanted:
            return None
        run = self._run("-Si", *wanted, stdin=self._config(repos))
        if run.returncode is None:
            return None
        found: dict[str, str] = {}
        name = None
        for line in run.stdout.splitlines():
            key, sep, value = line.partition(":")
            if not sep:
                continue
            if key.strip() == "Name":
                name = value.strip()
            elif key.strip() == "Version" and name is not None:
                # the first repository that has it wins, as for pacman -S
                found.setdefault(name, value.strip())
        return {n: found.get(n) for n in wanted}

    def prefetch(self) -> None:
        if self._check is None and self.trap():
            self._check = self._run("-Dk", stdin="")
        if self._check is None:
            self._check = start_tool(
                self._argv("-Dk"),
                env=self._ctx.env,
                timeout=min(self._ctx.options.timeout, 60.0),
                stdin=self._config(),
            )

    def consistency(self) -> Consistency:
        self.prefetch()
        assert self._check is not None
        run = self._check.result()
        errors = [
            line[len("error: ") :].strip()
            for line in (run.stdout + run.stderr).splitlines()
            if line.startswith("error: ")
        ]
        problems = tuple(e for e in errors if _DB_PROBLEM.search(e))
        unavailable = run.problem if run.returncode is None else None
        if run.returncode is not None and (
            run.returncode not in (0, 1) or len(problems) < len(errors)
        ):
            unavailable = f"pacman -Dk exited {run.returncode}: {run.stderr.strip()[:300]}"
        return Consistency(family="pacman", problems=problems, runs=(run,), unavailable=unavailable)
