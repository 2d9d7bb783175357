"""A `check --no-probe` again on a machine where nothing it read has changed.

A run that passed records, besides its report, every look it took at the machine
(vkdoctor.speed.inputs) and the situation it ran in: its arguments, folder, environment (as a
digest), user and groups, limits, umask, namespaces, interpreter and terminal. The next run
in the same situation looks again; when every look sees what it saw, that run still loads
every driver for real (the load test, vkdoctor.children.loadtest) and runs again the checks that read
what changes with no file changing (free space, memory: `LIVE`). Only when the load test and
each of those checks find exactly what they found before is the report the last one, printed
as it was, without importing or running the rest. Anything else, and the run is a full one.

So a replayed report can only be stale through a read that no look records: a program it
started (a run that starts one is never replayed) or a library's own reads below Python.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import resource
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vkdoctor.speed import factcache, inputs

if TYPE_CHECKING:
    from vkdoctor.checks.base import Check
    from vkdoctor.children import Spawner
    from vkdoctor.model import CheckResult
    from vkdoctor.model.context import Context, Options

    #: how the runner runs one check (vkdoctor.runner.run_one)
    RunOne = Callable[..., CheckResult]

#: bumped when what is kept changes shape
FORMAT = 1
#: the options a replayed run may have: none that writes a file or changes what is checked,
#: and not -v or -vv (-vv's evidence holds times and bytes that differ in every run)
OPTIONS = frozenset({"--no-probe", "--strict"})
#: the checks that read what changes with no file changing, run again by every replay; a run in
#: which another check read such a thing is not kept
LIVE = {
    "VKH001": "vkdoctor.checks.host:HostFacts",
    "VKS001": "vkdoctor.checks.disk:FreeSpace",
    "VKS002": "vkdoctor.checks.disk:WritableCaches",
}
#: what the C library and ld.so read for every program (a preload, the time zone, users and
#: groups by NSS): looked at by every kept run, as no Python call of vkdoctor's reads them
SYSTEM_FILES = (
    "/etc/ld.so.preload",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
)
#: a file changed this close to the run's start may have changed again after it was read with
#: the same size and times: file times are as coarse as the kernel's clock tick on ext4, and a
#: whole second on ext3, on ext4 with small inodes and on some network filesystems. Such a run
#: is not kept (the next one is)
RACY_NS = 1_100_000_000


def eligible(args: Sequence[str]) -> bool:
    """Whether `vkdoctor ARGS` is a run that can be replayed: `check --no-probe` and options
    that change neither what runs nor where the report goes."""
    return (
        len(args) >= 2
        and args[0] == "check"
        and "--no-probe" in args[1:]
        and all(a in OPTIONS for a in args[1:])
    )


def situation(args: Sequence[str], env: Mapping[str, str]) -> str:
    """A digest of everything besides files that a run's report depends on (`args`: the
    command line's words after the program's name)."""
    old = os.umask(0o77)
    os.umask(old)
    limits = []
    for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
        with contextlib.suppress(OSError, ValueError):
            limits.append((name, resource.getrlimit(getattr(resource, name))))
    streams = []
    for fd in (1,):  # the report's: its colours and width (a passing run writes only there)
        try:
            mode = os.fstat(fd).st_mode & 0o170000
            tty = os.isatty(fd)
            size = tuple(os.get_terminal_size(fd)) if tty else None
        except OSError:
            mode, tty, size = -1, False, None
        streams.append((mode, tty, size))
    namespaces: list[str | None] = []
    for ns in ("mnt", "user", "pid", "uts", "cgroup", "net"):
        try:
            namespaces.append(str(Path(f"/proc/self/ns/{ns}").readlink()))
        except OSError:
            namespaces.append(None)
    try:
        cwd: str | None = str(Path.cwd())
    except OSError:
        cwd = None
    parts = (
        FORMAT,
        list(args),
        cwd,
        sorted(env.items()),
        (os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())),
        old,
        limits,
        tuple(os.uname()),
        (sys.executable, sys.version, sys.flags),
        streams,
        namespaces,
    )
    return inputs.digest(repr(parts).encode("utf-8", "surrogateescape"))


def _store(cache_dir: Path) -> factcache.Store | None:
    return factcache.store(
        cache_dir, "replay", sources=(__file__, inputs.__file__, factcache.__file__), keep=8
    )


def start_recording(
    cache_dir: Path, args: Sequence[str], env: Mapping[str, str]
) -> inputs.Recorder:
    """Note what this run of `vkdoctor ARGS` in `env` reads (not its own stores, nor the Mesa
    cache the drivers it loads write, nor the load test's folders, wherever tempfile puts
    them). The rest of the cache directory is the machine's like any other folder: the
    overlays built there (overlays/, extracted/) are what LD_LIBRARY_PATH leads ld.so to when a
    user runs under one."""
    tmp = {env.get(k) for k in ("TMPDIR", "TEMP", "TMP")} | {"/tmp", "/var/tmp", "/usr/tmp"}
    with contextlib.suppress(OSError):
        tmp.add(str(Path.cwd()))
    folders = tuple(f"{t.rstrip('/')}/vkdoctor-load-" for t in tmp if t)
    own = (f"{cache_dir}/facts/", f"{cache_dir}/mesa/")
    rec = inputs.start(ignored=(*own, *folders))
    rec.notes["situation"] = situation(args, env)
    rec.notes["cache_dir"] = cache_dir
    return rec


def note_output(text: str) -> None:
    """What the run printed on standard output, as it reached it."""
    rec = inputs.recorder()
    if rec is not None:
        rec.notes.setdefault("stdout", []).append(text)


def note_checks(ctx: Context, env: Mapping[str, str]) -> None:
    """The context the checks ran in and the load test's result (the check command run in
    `env`)."""
    rec = inputs.recorder()
    if rec is None:
        return
    from vkdoctor import facts

    if not ctx.live or dict(ctx.env) != dict(env):
        rec.refuse("the checks ran in another environment (an overlay)")
        return
    o = ctx.options
    rec.notes["context"] = {
        "elevated": ctx.elevated,
        "machine": ctx.machine,
        "cwd": str(ctx.cwd),
        "options": {
            "search_paths": [str(p) for p in o.search_paths],
            "packages": [str(p) for p in o.packages],
            "timeout": o.timeout,
            "cpu": o.cpu,
            "gpu": o.gpu,
            "capabilities": o.capabilities,
            "adapter": o.adapter,
            "disk_warn_bytes": o.disk_warn_bytes,
            "disk_fail_bytes": o.disk_fail_bytes,
            "cache_dir": str(o.cache_dir) if o.cache_dir is not None else None,
            "probe": o.probe,
        },
    }
    from vkdoctor.facts.kept import kept

    rec.notes["load_test"] = normal_load_test(facts.load_test(ctx))
    rec.notes["kept_facts"] = kept(ctx)


def _options(kept: Mapping[str, Any]) -> Options:
    from vkdoctor.model.context import Options

    return Options(
        search_paths=tuple(Path(p) for p in kept["search_paths"]),
        packages=tuple(Path(p) for p in kept["packages"]),
        timeout=kept["timeout"],
        cpu=kept["cpu"],
        gpu=kept["gpu"],
        capabilities=kept["capabilities"],
        adapter=kept["adapter"],
        disk_warn_bytes=kept["disk_warn_bytes"],
        disk_fail_bytes=kept["disk_fail_bytes"],
        cache_dir=Path(kept["cache_dir"]) if kept["cache_dir"] is not None else None,
        probe=kept["probe"],
    )


def normal_load_test(run: Any) -> Any:
    """The load test's result without what differs between two equal runs (times, how its
    first child began)."""
    from vkdoctor.model.record import to_json

    doc = to_json(run)
    for key in ("seconds", "first_child"):
        doc.pop(key, None)
    for outcome in doc["outcomes"]:
        outcome.pop("seconds", None)
    return doc


def _encoded(result: CheckResult) -> tuple[Any, ...]:
    from vkdoctor.speed.offload import encode

    return encode(result)[:-1]  # all but its time


def _shown(encoded: Sequence[Any]) -> tuple[Any, ...]:
    """What the text report shows of an encoded result: all but its findings' evidence (free
    space and memory to the byte change from one run to the next)."""
    code, family, title, status, findings, skip_reason = encoded
    return (code, family, title, status, tuple(f[:5] for f in findings), skip_reason)


def _code_files() -> list[str]:
    """vkdoctor's own modules, and the load test's script: another vkdoctor gives another
    report. Every module of the package, not only those this process imported: the package
    checks run in a fork (vkdoctor.speed.offload) that imports some of theirs there alone."""
    here = Path(__file__).parent.parent  # the package
    files = {
        str(m.__file__)
        for m in list(sys.modules.values())
        if getattr(m, "__file__", None) and str(m.__file__).startswith(str(here))
    }
    for folder, subfolders, names in os.walk(here):
        subfolders[:] = [d for d in subfolders if d != "__pycache__"]
        files.update(f"{folder}/{n}" for n in names if n.endswith(".py"))
    return sorted({*files, str(here.parent / "probes" / "loadtest.py"), sys.executable})


def save(code: int | str | None) -> None:
    """Keep this run for the next one, when it passed and can be replayed."""
    rec = inputs.recorder()
    inputs.stop()
    if rec is None or code not in (0, None) or rec.unfit is not None:
        return
    notes = rec.notes
    if "context" not in notes or len(notes.get("results", ())) != 1:
        return
    live = sorted(c for c in rec.volatile if isinstance(c, str))
    if any(c not in LIVE for c in live):
        return
    looks = [
        *rec.kept_looks(),
        *(("stat", f) for f in _code_files()),
        *(("read", f) for f in SYSTEM_FILES),
    ]
    seen = [(how, path, inputs.observe((how, path))) for how, path in looks]
    if rec.changed(seen):
        return
    newest = rec.started_ns - RACY_NS
    if any(s[0] == "id" and max(s[1][7], s[1][8]) >= newest for _, _, s in seen):
        return
    results = notes["results"][0]
    entry = {
        "looks": seen,
        # not compared: what only the checks that run again read (for a reader of the store)
        "live_looks": sorted(
            ({path for _, path in rec.looks} | rec.volatile_paths) - {path for _, path, _ in seen}
        ),
        "results": [(c, _encoded(r)) for c, r in results.items()],
        "live": live,
        **notes["context"],
        "load_test": notes["load_test"],
        "kept_facts": notes["kept_facts"],
        "stdout": "".join(notes.get("stdout", ())),
    }
    store = _store(notes["cache_dir"])
    if store is not None:
        store.put(notes["situation"], entry)
        store.save()


#: what `attempt` did: printed the last report; started the load test, whose result the full
#: run takes (its facts are offered, vkdoctor.model.context); or nothing the full run takes
REPLAYED, STARTED, UNTOUCHED = "replayed", "started", "untouched"
#: what `_same_again` found: all the same; a live check's result changed (the kept facts hold:
#: the files they come from are unchanged); the load test's result changed
SAME, LIVE_CHANGED, LOAD_CHANGED = "same", "live changed", "load changed"


def attempt(
    cache_dir: Path,
    args: Sequence[str],
    env: Mapping[str, str],
    run_one: RunOne,
    spawner: Spawner | None,
) -> str:
    """Print the last run's report when `vkdoctor ARGS` in `env` would give the same one (the
    module's docstring says how that is known): REPLAYED. The load test gets its children
    through `spawner`. Otherwise nothing was printed and the command
    runs in full: STARTED when the load test was started here and the full run takes it with
    this attempt's facts, UNTOUCHED when it takes nothing. A load test that found something
    else than the kept run's ran on the kept load targets: whatever changed may have changed
    them too, unseen by any look, so neither it nor they pass to the full run."""
    store = _store(cache_dir)
    entry = store.get(situation(args, env)) if store is not None else None
    if entry is None or not _unchanged(entry):
        return UNTOUCHED
    from vkdoctor.model.context import Context, offer_facts

    ctx = Context(
        root=Path("/"),
        env=dict(env),
        elevated=entry["elevated"],
        machine=entry["machine"],
        cwd=Path(entry["cwd"]),
        options=_options(entry["options"]),
        store=factcache.FactCache(cache_dir),
        spawner=spawner,
    )
    found = LOAD_CHANGED  # an error: nothing is offered
    try:
        found = _same_again(ctx, entry, run_one)
    finally:
        if found != LOAD_CHANGED:
            offer_facts(ctx)  # for the full run: the load test started here, the live facts
    if found == LOAD_CHANGED:
        return UNTOUCHED
    if found != SAME:
        return STARTED
    try:
        data = entry["stdout"].encode(sys.stdout.encoding, sys.stdout.errors or "strict")
    except (UnicodeError, LookupError, AttributeError, TypeError):
        return STARTED  # the full run says it as it can
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except OSError:
        return STARTED  # the full run says why the report is lost
    return REPLAYED


def _unchanged(entry: Mapping[str, Any]) -> bool:
    """Whether every look of the kept run sees what it saw."""
    try:
        return all(inputs.observe((how, path)) == seen for how, path, seen in entry["looks"])
    except (TypeError, ValueError, KeyError):  # not what save() writes
        return False


def _same_again(ctx: Context, entry: Mapping[str, Any], run_one: RunOne) -> str:
    """Whether the volatile checks and the load test find what they found last time: SAME,
    LIVE_CHANGED or LOAD_CHANGED (each run as the runner runs a check: `run_one`,
    vkdoctor.runner's)."""
    from vkdoctor import facts
    from vkdoctor.facts.kept import give
    from vkdoctor.facts.selection import selected_codes
    from vkdoctor.speed.offload import decode

    give(ctx, entry["kept_facts"])  # the same files read: the same scan, the same loader
    kept = dict(entry["results"])
    selection: frozenset[str] | None = frozenset(kept)
    ctx.set_fact(selected_codes, selection)
    results = {code: decode((*value, 0.0)) for code, value in kept.items()}
    for code in entry["live"]:
        results[code] = run_one(ctx, _live_check(code), results, debug=False)
        if _shown(_encoded(results[code])) != _shown(kept[code]):
            return LIVE_CHANGED
    if entry["load_test"] is None or normal_load_test(facts.load_test(ctx)) != entry["load_test"]:
        return LOAD_CHANGED
    return SAME


def _live_check(code: str) -> type[Check]:
    module, _, name = LIVE[code].partition(":")
    check: type[Check] = getattr(importlib.import_module(module), name)
    return check
