"""dpkg: reads /var/lib/dpkg/status and info/*.list directly (locale-free, no process per file).

Only the consistency check runs tools: `dpkg --audit` and `apt-get check`, each once.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from functools import cmp_to_key
from pathlib import Path
from typing import Any

from vkdoctor.model import tree
from vkdoctor.model.context import Context
from vkdoctor.model.factstore import FactKind
from vkdoctor.model.files import LARGE, read_bytes
from vkdoctor.packages.aptroot import apt_env, unsafe_source
from vkdoctor.packages.deps import unmet
from vkdoctor.packages.listgrep import ListSearch
from vkdoctor.packages.model import Consistency, Family, Package, Relation
from vkdoctor.packages.paths import spellings
from vkdoctor.packages.proc import RunningTool, ToolRun, run_tool, start_tool, which
from vkdoctor.packages.versions import dpkg_compare

ADMINDIR = "/var/lib/dpkg"
#: what the status file alone answers (its packages, the unmet dependencies), `dpkg --audit`'s
#: verdict and which list file names each path asked for, kept while the files are the same
_STATUS = FactKind("dpkg-status", (__file__,), keep=8)
_AUDIT = FactKind("dpkg-audit", (__file__,), keep=4)
_OWNERS = FactKind("dpkg-owners", (__file__,), keep=4)
#: Status "want flag status": the last word, for packages whose files are on disk
ON_DISK = {
    "installed",
    "unpacked",
    "half-configured",
    "half-installed",
    "triggers-awaited",
    "triggers-pending",
}
_ABBREV = {
    "installed": "ii",
    "unpacked": "iU",
    "half-configured": "iF",
    "half-installed": "iH",
    "triggers-awaited": "iW",
    "triggers-pending": "iT",
}
_REL = re.compile(r"^\s*([^\s(:]+)(?::[a-z0-9-]+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?")


#: the fields the backend uses; Description and Conffiles (most of the file) are skipped. A
#: field starts a line; "\n" rather than "^" (re.M) lets the regex engine jump from one newline
#: to the next instead of trying every position (10 -> 7 ms on 700 kB)
_FIELD = re.compile(
    r"\n(Package|Status|Version|Architecture|Source|Depends|Pre-Depends|Provides|Maintainer"
    r"|Multi-Arch):[ \t]*(.*(?:\n[ \t].*)*)"
)


_CONFFILES = re.compile(r"\nConffiles:[ \t]*((?:\n[ \t].*)*)")


def parse_status(text: str) -> list[dict[str, str]]:
    """The status file's paragraphs (deb822, blank-line separated), with the fields we use."""
    return [
        fields for chunk in text.split("\n\n") if (fields := dict(_FIELD.findall("\n" + chunk)))
    ]


def parse_relations(
    text: str, memo: dict[str, Relation | None] | None = None
) -> tuple[tuple[Relation, ...], ...]:
    """`a (>= 1) | b, c` -> ((a>=1, b), (c,)). Arch qualifiers (`python3:any`) are dropped.

    `memo` (alternative text -> Relation) spares reparsing `libc6 (>= 2.34)` in every package."""
    memo = {} if memo is None else memo
    groups: list[tuple[Relation, ...]] = []
    for group in text.replace("\n", " ").split(","):
        alts: list[Relation] = []
        for alt in group.split("|"):
            if alt in memo:
                rel = memo[alt]
            else:
                m = _REL.match(alt)
                rel = None
                if m and m.group(1):
                    rel = Relation(name=m.group(1), op=m.group(2), version=m.group(3))
                memo[alt] = rel
            if rel is not None:
                alts.append(rel)
        if alts:
            groups.append(tuple(alts))
    return tuple(groups)


def _package(
    para: Mapping[str, str], memo: dict[str, Relation | None] | None = None
) -> Package | None:
    status = para.get("Status", "").split()
    if len(status) != 3 or status[2] not in ON_DISK or "Package" not in para:
        return None
    version = para.get("Version", "")
    source, source_version = para.get("Source", para["Package"]), version
    m = re.match(r"^(\S+)\s*\((\S+)\)", source)
    if m:
        source, source_version = m.group(1), m.group(2)
    memo = {} if memo is None else memo
    deps = parse_relations(para.get("Pre-Depends", ""), memo) + parse_relations(
        para.get("Depends", ""), memo
    )
    provides = tuple(
        alt for group in parse_relations(para.get("Provides", ""), memo) for alt in group
    )
    return Package(
        family="dpkg",
        name=para["Package"],
        version=version,
        arch=para.get("Architecture", ""),
        source=source.strip(),
        source_version=source_version,
        depends=deps,
        provides=provides,
        packager=para.get("Maintainer"),
        state=None if status[2] == "installed" else _ABBREV.get(status[2], status[2]),
        multi_arch=para.get("Multi-Arch"),
        hold="dpkg selection: hold (apt-mark hold)" if status[0] == "hold" else None,
    )


def _key(spelling: str) -> bytes:
    return spelling.encode("utf-8", "surrogateescape")


def _search_lists(lists: Sequence[tuple[str, str]], wanted: Set[bytes]) -> dict[bytes, str]:
    """What ListSearch answers, read here: each wanted line -> the first list file holding it."""
    want = frozenset(wanted)
    found: dict[bytes, str] = {}
    for name, path in lists:
        try:
            # a package's file list can be megabytes (google-cloud-cli's: 4 MB)
            # the info folder is resolved inside the tree; dpkg makes no link in it
            lines = read_bytes(Path(path), LARGE, follow=False).split(b"\n")
        except OSError:
            continue
        for hit in want.intersection(lines):
            found.setdefault(hit, name)
    return found


#: where apt keeps the package lists it downloaded
LISTS = "/var/lib/apt/lists"


def _lists_names(ctx: Context) -> list[str]:
    """The names in the package lists' folder (none when there is no such folder)."""
    try:
        return tree.names(ctx, LISTS)
    except OSError:
        return []


#: the most files of one folder of a tree's database judged before dpkg --audit may run (a
#: full desktop's info/ holds ~10,000)
_AUDIT_NAMES = 1 << 17


class DpkgDB:
    """The dpkg database of `ctx.root`."""

    family: Family = "dpkg"

    def __init__(self, ctx: Context, admindir: str = ADMINDIR) -> None:
        self._ctx = ctx
        self.db_path = admindir
        self._packages: tuple[Package, ...] | None = None
        self._answers: dict[bytes, str | None] = {}
        self._audit: RunningTool | ToolRun | None = None
        #: the key and files `dpkg --audit`'s verdict was asked for in the fact store by
        self._audit_asked: tuple[tuple[object, ...], tuple[str | Path, ...]] | None = None
        self._search: ListSearch | None = None
        self._listing: list[tuple[str, str]] | None = None
        #: the key and files of this listing's answers in the fact store (once asked for)
        self._kept: tuple[tuple[object, ...], tuple[str, ...]] | None = None
        self._admin_dir: Path | None = None

    @property
    def _admin(self) -> Path:
        # a tree's links are followed inside the tree: an absolute one leads to this machine's
        if self._admin_dir is None:
            self._admin_dir = self._ctx.resolve(self.db_path)
        return self._admin_dir

    def _read(self, name: str, errors: str = "replace") -> str:
        """The text of the database's file `name` (vkdoctor.model.tree: links followed inside
        the tree, a regular file within the read bound)."""
        data = tree.read_bytes(self._ctx, f"{self._ctx.inside(self._admin)}/{name}", LARGE)
        return data.decode("utf-8", errors)

    def packages(self) -> tuple[Package, ...]:
        if self._packages is None:
            kept = self._status_kept("packages")
            if isinstance(kept, tuple) and all(isinstance(p, Package) for p in kept):
                self._packages = kept
            else:
                text = self._read("status")
                memo: dict[str, Relation | None] = {}
                pkgs = (_package(p, memo) for p in parse_status(text))
                self._packages = tuple(p for p in pkgs if p is not None)
                self._keep_status("packages", self._packages)
        return self._packages

    def _unmet_text(self) -> tuple[str, ...]:
        """The unmet dependencies, as text (kept with the status file's other facts)."""
        kept = self._status_kept("unmet")
        if isinstance(kept, tuple) and all(isinstance(u, str) for u in kept):
            return kept
        missing = tuple(str(u) for u in unmet(self))
        self._keep_status("unmet", missing)
        return missing

    def _status_kept(self, name: str) -> Any:
        """What an earlier run computed from this very status file (its identity unchanged)."""
        return self._ctx.store.get(_STATUS, (self._admin / "status",), (name, str(self._admin)))

    def _keep_status(self, name: str, value: object) -> None:
        self._ctx.store.put(_STATUS, (self._admin / "status",), (name, str(self._admin)), value)

    def leftovers(self) -> dict[str, str]:
        """Conffile path -> the package (name:arch) that left it: removed, not purged (state
        config-files, `rc` in dpkg -l). Read only when a file turns out to be nobody's."""
        text = self._read("status")
        out: dict[str, str] = {}
        for chunk in text.split("\n\n"):
            if " config-files\n" not in chunk + "\n":
                continue
            fields = dict(_FIELD.findall("\n" + chunk))
            if fields.get("Status", "").split()[-1:] != ["config-files"]:
                continue
            name, arch = fields.get("Package", ""), fields.get("Architecture")
            conffiles = _CONFFILES.search("\n" + chunk)
            for line in (conffiles.group(1) if conffiles else "").splitlines():
                parts = line.split()
                if parts and parts[0].startswith("/"):
                    out[parts[0]] = f"{name}:{arch}" if arch else name
        return out

    def conffiles(self, pkg: Package) -> list[str]:
        """The conffiles of the installed `pkg` its status lists (dpkg --verify hashes them)."""
        text = self._read("status")
        for chunk in text.split("\n\n"):
            fields = dict(_FIELD.findall("\n" + chunk))
            if fields.get("Package") != pkg.name or fields.get("Architecture") != pkg.arch:
                continue
            conffiles = _CONFFILES.search("\n" + chunk)
            lines = (conffiles.group(1) if conffiles else "").splitlines()
            return [w[0] for w in map(str.split, lines) if w and w[0].startswith("/")]
        return []

    def diversions(self) -> dict[str, str]:
        """Where dpkg-divert moved each diverted path (its `diversions` file: from, to,
        package, three lines each)."""
        try:
            lines = self._read("diversions").splitlines()
        except OSError:
            return {}
        return {lines[i]: lines[i + 1] for i in range(0, len(lines) - 2, 3)}

    def holds(self) -> list[str]:
        """Every package on hold (apt-mark hold), installed or not ("hold ok not-installed":
        apt will not install it while the hold stays)."""
        text = self._read("status")
        out: list[str] = []
        for chunk in text.split("\n\n"):
            if "Status: hold " not in chunk:
                continue
            fields = dict(_FIELD.findall("\n" + chunk))
            if fields.get("Status", "").startswith("hold ") and "Package" in fields:
                out.append(fields["Package"])
        return out

    def by_name(self, name: str) -> tuple[Package, ...]:
        base, _, arch = name.partition(":")
        return tuple(p for p in self.packages() if p.name == base and (not arch or p.arch == arch))

    def _lists(self) -> list[tuple[str, str]]:
        # plain strings, not Path objects: ~800 files, and Path's sort order costs more than
        # reading them
        if self._listing is None:
            try:
                with os.scandir(self._admin / "info") as it:
                    self._listing = sorted((e.name, e.path) for e in it if e.name.endswith(".list"))
            except OSError:
                self._listing = []
        return self._listing

    def _recall(self) -> None:
        """Take the answers an earlier run found in exactly these list files: the same names,
        each file of the same identity (a package installed, removed or upgraded changes them)."""
        if self._kept is not None:
            return
        lists = self._lists()
        key = (str(self._admin), tuple(name for name, _ in lists))
        files = tuple(path for _, path in lists)
        self._kept = (key, files)
        kept = self._ctx.store.get(_OWNERS, files, key)
        for line, stem in (kept if isinstance(kept, dict) else {}).items():
            self._answers.setdefault(line, stem)

    def prefetch_owners(self, paths: Iterable[str]) -> None:
        """Start looking for the owners of `paths` now (one grep over info/*.list, on another
        core); `owners` of the same paths then only reads the answer."""
        if self._search is not None:
            return
        wanted = {_key(s) for path in dict.fromkeys(paths) for s in spellings(self._ctx, path)}
        self._recall()
        new = wanted - self._answers.keys()
        if new:
            self._search = self._start_search(new)

    def _start_search(self, wanted: set[bytes]) -> ListSearch:
        timeout = min(self._ctx.options.timeout, 60.0)
        return ListSearch(self._lists(), wanted, env=self._ctx.env, timeout=timeout)

    def _lookup(self, wanted: set[bytes]) -> dict[bytes, str]:
        """Which list file (`libllvm22:amd64`, `libc6`) names each wanted path.

        One pass over info/*.list per batch of new paths, by grep where it can answer, else
        here: each file is split into lines and intersected with the wanted set (C speed).
        Answers, including "nobody", are kept; a path in several lists belongs to the first
        list in name order.
        """
        if self._search is not None:
            self._collect(self._search)
            self._search = None
        self._recall()
        new = wanted - self._answers.keys()
        if new:
            self._collect(self._start_search(new))
        return {w: stem for w in wanted if (stem := self._answers.get(w)) is not None}

    def _collect(self, search: ListSearch) -> None:
        found = search.result()
        if found is None:
            found = _search_lists(search.lists, search.wanted)
        for line in search.wanted:
            name = found.get(line)
            self._answers.setdefault(line, name[: -len(".list")] if name else None)
        if self._kept is not None:
            key, files = self._kept
            self._ctx.store.put(_OWNERS, files, key, dict(self._answers))

    def _by_stem(self, stem: str) -> Package | None:
        name, _, arch = stem.partition(":")
        for p in self.packages():
            if p.name == name and (not arch or p.arch == arch):
                return p
        return None

    def owners(self, paths: Iterable[str]) -> dict[str, tuple[Package, ...]]:
        asked = {path: spellings(self._ctx, path) for path in dict.fromkeys(paths)}
        found = self._lookup({_key(s) for sp in asked.values() for s in sp})
        out: dict[str, tuple[Package, ...]] = {}
        for path, candidates in asked.items():
            for spelling in candidates:
                stem = found.get(_key(spelling))
                pkg = self._by_stem(stem) if stem else None
                if pkg is not None:
                    out[path] = (pkg,)
                    break
        return out

    def compare(self, a: str, b: str) -> int:
        return dpkg_compare(a, b)

    def modified(self, pkg: Package, path: str) -> bool | None:
        from vkdoctor.packages.digests import file_digest, md5sums_entry

        for stem in (f"{pkg.name}:{pkg.arch}", pkg.name):
            try:
                text = self._read(f"info/{stem}.md5sums", "surrogateescape")
            except OSError:
                continue
            recorded = md5sums_entry(text, spellings(self._ctx, path))
            if recorded is None:
                return None
            actual = file_digest(self._ctx.under(path), "md5")
            return None if actual is None else actual != recorded
        return None

    def origins(self, pkgs: Iterable[Package]) -> dict[Package, str]:
        """Packages not installed from the configured archive: from a PPA, or from no repository.

        One `apt-cache policy` for all of them, only when the tree has apt lists to compare with.
        """
        pkgs = list(pkgs)
        names = [p.display_name for p in pkgs]
        # every run asks this: only where apt keeps plain lists, whose cache is cheap to read
        # (compressed lists, as in container images, make apt-cache rebuild it: ~0.6 s)
        if not pkgs or not which("apt-cache", self._ctx.env):
            return {}
        if not any(n.endswith("_Packages") for n in _lists_names(self._ctx)):
            return {}
        if not self._sources_usable():
            return {}
        run = self._apt_cache("policy", *names)
        if run.returncode != 0:
            return {}
        policy = parse_policy(run.stdout)
        offered = parse_offered(run.stdout)
        out: dict[Package, str] = {}
        for pkg, name in zip(pkgs, names, strict=True):
            entry = policy.get(name) or policy.get(pkg.name)
            if entry is None:
                continue
            installed, candidate, origins = entry
            ppa = next((m for o in origins if (m := _PPA.search(o))), None)
            local = bool(origins) and all(o.endswith("/var/lib/dpkg/status") for o in origins)
            if ppa is not None:
                out[pkg] = (
                    f"from ppa:{ppa.group(1)}/{ppa.group(2)} (a PPA, not the distribution's archive)"
                )
            elif local and candidate == installed:
                versions = offered.get(name) or offered.get(pkg.name) or []
                newest = max(versions, key=cmp_to_key(dpkg_compare)) if versions else None
                out[pkg] = (
                    f"not in any configured repository at version {installed} (installed from "
                    "a local .deb or a repository since removed)"
                    + (f"; the repositories offer {newest}" if newest else "")
                )
        return out

    def _sources_usable(self) -> bool:
        """Whether apt is given the tree's sources (always on the live machine; see aptroot)."""
        return self._ctx.live or unsafe_source(self._ctx.root) is None

    def lists_date(self) -> float | None:
        """When the package lists were last refreshed (apt update): the newest list's mtime;
        None when there are none, or the tree's sources are not handed to apt."""
        if not self._sources_usable():
            return None
        lists = self._ctx.resolve(LISTS)
        try:
            return max(
                (os.lstat(lists / n).st_mtime for n in _lists_names(self._ctx) if "_Packages" in n),
                default=None,
            )
        except OSError:
            return None

    def _policy(self, names: list[str]) -> dict[str, tuple[str, str, list[str]]] | None:
        """`apt-cache policy NAMES`, parsed; None without apt or package lists to compare with."""
        if not which("apt-cache", self._ctx.env) or self.lists_date() is None:
            return None
        run = self._apt_cache("policy", *names)
        if run.returncode != 0:
            return None
        return parse_policy(run.stdout)

    def _apt_cache(self, *args: str) -> ToolRun:
        return run_tool(
            ["apt-cache", *args],
            env=apt_env(self._ctx),
            timeout=min(self._ctx.options.timeout, 60.0),
        )

    def candidates(self, names: Iterable[str]) -> dict[str, str | None] | None:
        """The newest version the configured repositories offer for each name (as of the last
        apt update), None for a name none offers; None when there are no package lists. Not
        apt's candidate: an installed version newer than the repositories' is the candidate."""
        wanted = list(dict.fromkeys(names))
        if not wanted or not which("apt-cache", self._ctx.env) or self.lists_date() is None:
            return None
        run = self._apt_cache("policy", *wanted)
        if run.returncode != 0:
            return None
        offered = parse_offered(run.stdout)
        out: dict[str, str | None] = {}
        for name in wanted:
            # apt prints the native architecture's packages without their ":amd64"
            versions = offered.get(name) or offered.get(name.partition(":")[0], [])
            out[name] = max(versions, key=cmp_to_key(dpkg_compare)) if versions else None
        return out

    def depends_of(self, name: str, version: str) -> tuple[tuple[Relation, ...], ...]:
        """Pre-Depends and Depends of the version of `name` the lists offer (apt-cache show)."""
        run = self._apt_cache("show", f"{name}={version}")
        if run.returncode != 0:
            return ()
        first = next(iter(parse_status(run.stdout)), {})
        return parse_relations(first.get("Pre-Depends", "")) + parse_relations(
            first.get("Depends", "")
        )

    def suites(self, names: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        """(version, suite) for every version the package lists offer of each name, newest
        first; empty without apt or lists."""
        wanted = list(dict.fromkeys(names))
        if not wanted or not which("apt-cache", self._ctx.env) or self.lists_date() is None:
            return {}
        run = self._apt_cache("policy", *wanted)
        if run.returncode != 0:
            return {}
        found = parse_suites(run.stdout)
        order = cmp_to_key(dpkg_compare)
        return {
            name: sorted(
                found.get(name) or found.get(name.partition(":")[0], []),
                key=lambda e: order(e[0]),
                reverse=True,
            )
            for name in wanted
        }

    def prefetch(self) -> None:
        if self._audit is None:
            argv = ["dpkg", f"--admindir={self._admin}", "--audit"]
            refused = None if self._ctx.live else self._audit_refused()
            self._audit = (
                ToolRun(argv=tuple(argv), returncode=None, problem=refused)
                if refused
                else self._audit_kept(argv)
                or start_tool(argv, env=self._ctx.env, timeout=min(self._ctx.options.timeout, 60.0))
            )

    def _audit_refused(self) -> str | None:
        """Why `dpkg --audit` must not be run on a tree's database (None: it may): every file
        of the database it may open is judged inside the tree first (vkdoctor.model.tree), since
        a FIFO, a device or a link out of the tree (to /dev/zero, /proc/kmsg) would stall it
        until its timeout or have it read this machine's files."""
        ctx = self._ctx
        admin = ctx.inside(self._admin)
        paths = [f"{admin}/{n}" for n in ("status", "available", "diversions", "statoverride")]
        for folder in ("updates", "info", "triggers"):
            with contextlib.suppress(OSError):
                names = tree.names(ctx, f"{admin}/{folder}", limit=_AUDIT_NAMES)
                if len(names) == _AUDIT_NAMES:
                    return f"{admin}/{folder} holds more than {_AUDIT_NAMES:,} files to judge"
                paths += [f"{admin}/{folder}/{n}" for n in names]
        for path in paths:
            why, _ = tree.judge(ctx, path, "dpkg")
            if why:
                return why
        return None

    def _audit_question(
        self, argv: Sequence[str]
    ) -> tuple[tuple[object, ...], tuple[str | Path, ...]]:
        """`dpkg --audit`'s key in the fact store and what it reads: the status file, the
        journal in updates/, which control files info/ holds (the directory's identity changes
        with every file added or removed), and dpkg itself."""
        dpkg = which("dpkg", self._ctx.env)
        updates = self._admin / "updates"
        try:
            journal = sorted(e.name for e in os.scandir(updates))
        except OSError:
            journal = []
        files = (self._admin / "status", self._admin / "info", updates, dpkg or "")
        return (tuple(argv), tuple(journal)), (*files, *(updates / n for n in journal))

    def _audit_kept(self, argv: Sequence[str]) -> ToolRun | None:
        key, files = self._audit_question(argv)
        kept = self._ctx.store.get(_AUDIT, files, key)
        if isinstance(kept, tuple) and len(kept) == 3:
            rc, out, err = kept
            return ToolRun(argv=tuple(argv), returncode=rc, stdout=out, stderr=err, kept=True)
        self._audit_asked = (key, files)
        return None

    def _audited(self) -> ToolRun:
        """`dpkg --audit`'s run (started by `prefetch`), kept for a later run."""
        self.prefetch()
        assert self._audit is not None
        audit = self._audit.result()
        if self._audit_asked is not None and audit.returncode is not None and not audit.kept:
            key, files = self._audit_asked  # kept when they did not change while it ran
            self._ctx.store.put(_AUDIT, files, key, (audit.returncode, audit.stdout, audit.stderr))
        return audit

    def consistency(self) -> Consistency:
        ctx = self._ctx
        timeout = min(ctx.options.timeout, 60.0)
        audit = self._audited()
        runs = [audit]
        audited = _audit_packages(audit)
        problems = [f"dpkg --audit: {pkg} is {why}" for pkg, why, _ in audited]
        missing = self._unmet_text()
        if missing and which("apt-get", ctx.env):
            check = run_tool(["apt-get", "check"], env=apt_env(ctx), timeout=timeout)
            runs.append(check)
            problems += [f"apt-get check: {p}" for p in _apt_unmet(check)]
        unavailable = audit.problem if audit.returncode is None else None
        return Consistency(
            family="dpkg",
            problems=tuple(problems),
            runs=tuple(runs),
            unavailable=unavailable,
            unmet=missing,
            reinstall=tuple(dict.fromkeys(pkg for pkg, _, again in audited if again)),
        )


_VERSION_LINE = re.compile(r"^ (\*\*\*| {3}) (\S+) (-?[0-9]+)$")
_PPA = re.compile(r"ppa\.launchpad(?:content)?\.net/([^/\s]+)/([^/\s]+)/")


def parse_policy(text: str) -> dict[str, tuple[str, str, list[str]]]:
    """`apt-cache policy` -> name -> (installed, candidate, origins of the installed version)."""
    out: dict[str, tuple[str, str, list[str]]] = {}
    name = installed = candidate = ""
    origins: list[str] = []
    current: str | None = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            if name:
                out[name] = (installed, candidate, origins)
            name, installed, candidate, origins, current = line[:-1], "", "", [], None
        elif line.startswith("  Installed: "):
            installed = line.split(": ", 1)[1].strip()
        elif line.startswith("  Candidate: "):
            candidate = line.split(": ", 1)[1].strip()
        elif m := _VERSION_LINE.match(line):
            current = m.group(2)
        elif current is not None and current == installed and line.startswith("        "):
            origins.append(line.strip().split(" ", 1)[1] if " " in line.strip() else line.strip())
    if name:
        out[name] = (installed, candidate, origins)
    return out


def parse_suites(text: str) -> dict[str, list[tuple[str, str]]]:
    """`apt-cache policy` -> name -> (version, suite) for every version a repository offers
    ("500 http://deb.debian.org/debian bookworm-backports/main amd64 Packages")."""
    out: dict[str, list[tuple[str, str]]] = {}
    name = ""
    current: str | None = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            name, current = line[:-1], None
            out[name] = []
        elif m := _VERSION_LINE.match(line):
            current = m.group(2)
        elif current is not None and line.startswith("        ") and name:
            words = line.split()
            if len(words) >= 3 and ":" in words[1] and not words[1].endswith("/status"):
                entry = (current, words[2].split("/")[0])
                if entry not in out[name]:
                    out[name].append(entry)
    return out


def parse_offered(text: str) -> dict[str, list[str]]:
    """`apt-cache policy` -> name -> the versions some repository offers (the version table's
    entries with an origin other than the dpkg status file)."""
    out: dict[str, list[str]] = {}
    name = ""
    current: str | None = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            name, current = line[:-1], None
            out[name] = []
        elif m := _VERSION_LINE.match(line):
            current = m.group(2)
        elif current is not None and line.startswith("        ") and name:
            origin = line.strip().split(" ", 1)[-1]
            if not origin.endswith("/var/lib/dpkg/status") and current not in out[name]:
                out[name].append(current)
    return out


_AUDIT_STATE = re.compile(
    r"The following packages? (?:are |is |have been |has been |have |has )?(.+?)(?:[,.:](?:\s|$)|$)"
)


def _audit_packages(run: ToolRun) -> list[tuple[str, str, bool]]:
    """(package, what is wrong, whether it must be reinstalled) per package `dpkg --audit` lists.
    It exits 0 even when it lists problems: each paragraph's header says what is wrong
    ("The following packages are only half configured, ..."), its indented lines name the
    packages ("PKG:ARCH  description")."""
    out: list[tuple[str, str, bool]] = []
    header: list[str] = []
    listing = False
    for line in run.stdout.splitlines():
        if not line.strip():
            header, listing = [], False
        elif line.startswith(" "):
            text = " ".join(header)
            m = _AUDIT_STATE.search(text)
            why = m.group(1).strip() if m else "reported"
            # "... must be reinstalled", or half installed: "completed by retrying it", which
            # apt does as a reinstall (dpkg --configure -a cannot: nothing was unpacked whole)
            out.append((line.split()[0], why, "reinstall" in text or "by retrying it" in text))
            listing = True
        else:
            if listing:
                header, listing = [], False
            header.append(line.strip())
    return out


def _apt_unmet(run: ToolRun) -> list[str]:
    out: list[str] = []
    seen = False
    pkg = ""
    for line in run.stdout.splitlines():
        if line.startswith("The following packages have unmet dependencies"):
            seen = True
            continue
        if seen and line.startswith(" "):
            text = " ".join(line.split())
            head, sep, rest = text.partition(" : ")
            if sep and " " not in head:
                pkg, text = head, rest
            out.append(f"{pkg} : {text}" if pkg else text)
    for line in run.stderr.splitlines():
        if line.startswith("E: ") and not out:
            out.append(line[3:])
    return out
