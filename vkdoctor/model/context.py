"""Context: the one object every check reads instead of the host.

Analysis code takes a `root` prefix and an `env` mapping and touches nothing else, so every rule is
testable on a tree built in tmp_path, and `--root` can inspect an image or chroot without running it.
Facts that several checks share (the driver scan, parsed ELF files, package queries) are computed
once per run through `Context.fact`, never cached at module level. What outlives the run is
asked of `Context.store` (vkdoctor.model.factstore), which keeps nothing unless the command
layer gives the Context a store that does.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from vkdoctor.model.factstore import NOTHING_KEPT, FactStore
from vkdoctor.model.record import field, record

if TYPE_CHECKING:
    from vkdoctor.children import Spawner

T = TypeVar("T")

#: symlinks followed in one path before giving up, as the kernel's MAXSYMLINKS
_MAX_LINKS = 40
#: a host path the kernel refuses with ELOOP (each /proc/self/root is a link it follows; without
#: /proc it is missing): what a tree's path resolves to when it takes more links than the kernel
#: follows, so that the host never follows the rest of the chain out of the tree
_TOO_MANY_LINKS = Path("/proc/self/root" * (_MAX_LINKS + 1))


@record(frozen=True, kw_only=True)
class Options:
    """What the user asked for on the command line, for the checks that care."""

    #: extra places to look for missing libraries (--search-path, VKDOCTOR_SEARCH_PATH)
    search_paths: tuple[Path, ...] = ()
    #: package files that may hold a missing library (--from-package)
    packages: tuple[Path, ...] = ()
    #: per child process (load test, probe), seconds
    timeout: float = 60.0
    #: probe adapter choice: "cpu", a name substring, or None for wgpu's high-performance pick
    cpu: bool = False
    #: --gpu: the probe must pass on an adapter that is not a CPU, and the load test find a GPU
    gpu: bool = False
    #: --capabilities: the capability ladder after the probe
    capabilities: bool = False
    adapter: str | None = None
    #: disk thresholds, in bytes free
    disk_warn_bytes: int = 5 * 1024**3
    disk_fail_bytes: int = 1024**3
    #: where vkdoctor keeps overlays and extracted libraries
    cache_dir: Path | None = None
    #: run the probe (check) or not (--no-probe)
    probe: bool = True


_SLASH = Path("/")


class FactWatch(Protocol):
    """Who is told which fact is being computed and which is asked for again (the recorder of
    what a run reads, which the face installs with `watch_facts`)."""

    def entered(self, fact: Callable[..., Any]) -> None: ...

    def left(self) -> None: ...

    def used(self, fact: Callable[..., Any]) -> None: ...


_watch: list[FactWatch] = []


def watch_facts(watch: FactWatch | None) -> None:
    """Tell `watch` from now on about the facts every Context computes and gives (None: nobody)."""
    _watch[:] = [] if watch is None else [watch]


@record(kw_only=True)
class Context:
    """Where and how to look. `root` is "/" for the live host."""

    root: Path = Path("/")
    env: Mapping[str, str] = field(default_factory=dict)
    #: the process we reason about runs with AT_SECURE (setuid/setgid/capabilities)
    elevated: bool = False
    #: `uname -m` of the process we reason about, e.g. "x86_64"
    machine: str = "x86_64"
    #: the working directory of the process we reason about (relative manifest paths)
    cwd: Path = Path("/")
    options: Options = field(default_factory=Options)
    #: answers kept from one run to the next (the command layer installs one that keeps them)
    store: FactStore = field(default=NOTHING_KEPT, repr=False)
    #: how the load test gets its children besides starting a program (vkdoctor.children): the
    #: face hands in the child forked at launch (vkdoctor.speed.zygote.SPAWNER)
    spawner: Spawner | None = field(default=None, repr=False)
    _facts: dict[Callable[..., Any], Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def live(self) -> bool:
        """True when we inspect the machine we run on, so loading libraries and probing makes sense."""
        return self.root == _SLASH

    def under(self, path: str | PurePosixPath) -> Path:
        """The host path of `path` as seen inside root. The single place that prefixes root."""
        p = PurePosixPath(path)
        if not p.is_absolute():
            p = PurePosixPath(self.cwd) / p
        if p.root == "//":  # POSIX keeps a leading "//"; Linux reads it as "/"
            p = PurePosixPath("/" + str(p).lstrip("/"))
        if self.live:
            return Path(p)
        return self.root / p.relative_to("/")

    def inside(self, host: Path) -> str:
        """The path inside root of the host path `host`, as the tree's programs see it (the
        inverse of `under`); `host` itself on the live machine or when it lies outside root."""
        if self.live:
            return str(host)
        try:
            rel = host.relative_to(self.root)
        except ValueError:
            return str(host)
        return "/" + str(rel) if str(rel) != "." else "/"

    def resolve(self, path: str | PurePosixPath) -> Path:
        """The host path of `path` with every symlink followed inside root.

        On the live machine this is realpath. Inspecting another root, an absolute link target
        such as /etc/alternatives/x is looked up inside that root, never on the host; links are
        followed one component at a time, and a loop gives back a path that fails with ELOOP. A
        `..` never undoes a component the kernel would stop at (missing, or not a directory): the
        path then fails there, as it does inside the tree.
        """
        text = str(path)
        if not text.startswith("/"):
            text = str(self.cwd).rstrip("/") + "/" + text
        if self.live:
            return Path(os.path.realpath(text))
        todo = [p for p in text.split("/") if p]
        done: list[str] = []
        links = 0
        while todo:
            part = todo.pop(0)
            if part == ".":
                continue
            if part == "..":
                here = self.under("/" + "/".join(done))
                if done and not here.is_dir():
                    return here.joinpath(part, *todo)  # ENOTDIR, as in the tree
                if done:
                    done.pop()
                continue
            candidate = "/" + "/".join([*done, part])
            try:
                target = str(self.under(candidate).readlink())
            except OSError as exc:
                if exc.errno != errno.EINVAL and todo:
                    # the kernel stops at a component that is missing or not a directory (a
                    # `..` after it does not undo it): the host stops at the same place
                    return self.under(candidate).joinpath(*todo)
                done.append(part)
                continue
            links += 1
            if links > _MAX_LINKS:
                return _TOO_MANY_LINKS
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p] + todo
        return self.under("/" + "/".join(done))

    def getenv(self, name: str) -> str | None:
        return self.env.get(name)

    def known(self, compute: Callable[[Context], T]) -> T | None:
        """The fact if it was computed already; None otherwise (nothing is computed)."""
        with self._lock:
            value = self._facts.get(compute)
            rec = _watch[0] if _watch else None
            if value is not None and rec is not None:
                rec.used(compute)
            return value

    def set_fact(self, compute: Callable[[Context], T], value: T) -> None:
        """Record what `compute` would give, from something that knows (the runner's selection)."""
        with self._lock:
            self._facts[compute] = value

    def fact(self, compute: Callable[[Context], T]) -> T:
        """`compute(self)`, evaluated once per Context. Exceptions are not cached."""
        with self._lock:
            rec = _watch[0] if _watch else None
            if compute not in self._facts:
                if rec is None:
                    self._facts[compute] = compute(self)
                else:
                    rec.entered(compute)
                    try:
                        self._facts[compute] = compute(self)
                    finally:
                        rec.left()
            elif rec is not None:
                rec.used(compute)
            return self._facts[compute]  # type: ignore[no-any-return]


#: a Context computed before the command line was read (vkdoctor.children.loadtest.start_early)
_offered: list[Context] = []


def offer_facts(ctx: Context) -> None:
    """Keep `ctx`'s facts for the command's own Context (`take_facts`)."""
    _offered[:] = [ctx]


def take_facts(ctx: Context) -> None:
    """Start `ctx` with the offered Context's facts when both see the same machine the same way
    (root, environment, working directory, machine, AT_SECURE, search paths, cache): the
    driver scan and the ELF files read before the command line was parsed are not read again."""
    if not _offered:
        return
    early = _offered.pop()
    if (
        early.root == ctx.root
        and early.env == ctx.env
        and early.cwd == ctx.cwd
        and early.machine == ctx.machine
        and early.elevated == ctx.elevated
        and early.options.search_paths == ctx.options.search_paths
        and early.options.cache_dir == ctx.options.cache_dir
        and not ctx._facts
    ):
        ctx._facts.update(early._facts)
