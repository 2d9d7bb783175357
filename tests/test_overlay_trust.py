"""Whom the overlay trusts: real users (root, nobody, daemon), real owners and modes, real POSIX
ACLs (setfacl), real symbolic links. Every refusal is shown next to the attack it stops, done for
real by the other user, and next to the same layout made safe, which is accepted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import overlay_lab as lab
from tests.conftest import run_vkdoctor
from tests.nobody import NOBODY, as_nobody, vkdoctor_as_nobody, world_readable_dir

DAEMON = 1  # another real user of the system (Debian's daemon), neither root nor nobody
SONAME = "libwob.so.1"


@pytest.fixture
def top() -> Iterator[Path]:
    with world_readable_dir("vkdoctor-trust-") as d:
        yield d


def _scenario(top: Path) -> tuple[Path, dict[str, str]]:
    """A fake driver that needs SONAME, which nothing on the system has: (a good build of SONAME,
    the environment that shows vkdoctor the driver, with a private cache of root's)."""
    provider = lab.shared_lib(top / "build" / SONAME, SONAME)
    drv = lab.shared_lib(
        top / "drv" / "libvulkan_wob.so", "libvulkan_wob.so", needs=[provider], use_symbol="wob_fn"
    )
    (top / "icd").mkdir()
    manifest = lab.manifest(top / "icd" / "wob.json", drv)
    cache = top / "rootcache"
    cache.mkdir(mode=0o700)
    return provider, {"VK_DRIVER_FILES": str(manifest), "XDG_CACHE_HOME": str(cache)}


def _supply(
    directory: Path, provider: Path, owner: int = 0, mode: int = 0o755, lib_owner: int | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    lib = directory / SONAME
    shutil.copy(provider, lib)
    lib.chmod(0o644)
    os.chown(lib, owner if lib_owner is None else lib_owner, owner)
    os.chown(directory, owner, owner)
    directory.chmod(mode)
    return lib


def _overlay(
    search: Path, env: dict[str, str], *, nobody: bool = False
) -> tuple[int, dict | None, list[str]]:
    args = ["overlay", "--search-path", str(search), "--format", "json"]
    proc = vkdoctor_as_nobody(args, env=env) if nobody else run_vkdoctor(args, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln.removeprefix("vkdoctor overlay: ") for ln in proc.stderr.splitlines()]
    assert proc.stdout, (proc.returncode, proc.stderr)
    return proc.returncode, json.loads(proc.stdout), lines


def _refused(lines: list[str], lib: Path, reason: str) -> bool:
    return f"  {lib} (search path): refused: {reason}" in lines


def _sh_as(uid: int, script: str) -> subprocess.CompletedProcess[str]:
    """`sh -c SCRIPT` as `uid` (its own group, no others): what that user can really do."""
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


# --- search-path candidates -------------------------------------------------------------------


def test_a_read_only_search_path_owned_by_another_user_is_refused(top: Path) -> None:
    provider, env = _scenario(top)
    theirs = top / "theirs"
    # root's library, 0644, in nobody's directory that nobody can write right now
    lib = _supply(theirs, provider, owner=NOBODY, mode=0o555, lib_owner=0)
    rc, doc, lines = _overlay(theirs, env)
    assert rc == 1 and doc is None
    assert _refused(lines, lib, f"in {theirs}, a directory owned by nobody (uid {NOBODY})"), lines
    # why: its owner turns the write bit back on and swaps the library
    evil = lab.shared_lib(top / "evil" / SONAME, SONAME)
    attack = _sh_as(NOBODY, f"chmod u+w {theirs} && cp {evil} {theirs}/.x && mv {theirs}/.x {lib}")
    assert attack.returncode == 0, attack.stderr
    assert lib.read_bytes() == evil.read_bytes()


def test_a_search_path_under_a_directory_another_user_owns_is_refused(top: Path) -> None:
    provider, env = _scenario(top)
    above = top / "above"
    above.mkdir()
    mine = above / "mine"
    lib = _supply(mine, provider)  # root's own, 0755, 0644: only the directory above is not
    rc, doc, _ = _overlay(mine, env)
    assert rc == 0 and doc is not None and doc["libraries"][0]["target"] == str(lib)
    os.chown(above, NOBODY, NOBODY)
    above.chmod(0o555)
    rc, doc, lines = _overlay(mine, env)
    assert rc == 1 and doc is None
    assert _refused(lines, lib, f"under {above}, a directory owned by nobody (uid {NOBODY})"), lines
    # why: whoever may rename `mine` swaps the whole directory, library and all
    attack = _sh_as(NOBODY, f"chmod u+w {above} && mv {mine} {above}/old && mkdir {mine}")
    assert attack.returncode == 0, attack.stderr


def test_write_access_through_a_posix_acl_is_refused(top: Path) -> None:
    provider, env = _scenario(top)
    shared = top / "shared"
    lib = _supply(shared, provider)
    assert shutil.which("setfacl"), "setfacl (Debian package acl) is needed for this test"

    def nobody_can_create() -> bool:
        return _sh_as(NOBODY, f"touch {shared}/.probe && rm {shared}/.probe").returncode == 0

    lab.run(["setfacl", "-m", f"u:{NOBODY}:rwx", str(shared)])
    assert nobody_can_create()
    rc, _, lines = _overlay(shared, env)
    assert rc == 1
    reason = f"in {shared}, a directory nobody (uid {NOBODY}) through an ACL entry can write"
    assert _refused(lines, lib, reason), lines
    # the mask takes the write permission away from every named entry: safe again
    lab.run(["setfacl", "-m", "m::rx", str(shared)])
    assert not nobody_can_create()
    rc, doc, _ = _overlay(shared, env)
    assert rc == 0 and doc is not None
    # a named group
    lab.run(["setfacl", "-b", str(shared)])
    lab.run(["setfacl", "-m", "g:nogroup:rwx", str(shared)])
    rc, _, lines = _overlay(shared, env)
    reason = f"in {shared}, a directory group nogroup (gid 65534) through an ACL entry can write"
    assert rc == 1 and _refused(lines, lib, reason), lines
    # on the library itself
    lab.run(["setfacl", "-b", str(shared)])
    lab.run(["setfacl", "-m", f"u:{NOBODY}:rw", str(lib)])
    assert _sh_as(NOBODY, f"test -w {lib}").returncode == 0
    rc, _, lines = _overlay(shared, env)
    reason = f"writable by nobody (uid {NOBODY}) through an ACL entry (mode 0664)"
    assert rc == 1 and _refused(lines, lib, reason), lines
    # an entry for root (or you) only: the mode's group bits show the mask (g+w), yet nobody else
    # can write; the ACL itself says so
    lab.run(["setfacl", "-b", str(lib)])
    lab.run(["setfacl", "-m", "u:root:rwx", str(shared)])
    assert shared.stat().st_mode & 0o020 and not nobody_can_create()
    rc, doc, _ = _overlay(shared, env)
    assert rc == 0 and doc is not None


def test_symbolic_links_are_judged_where_they_lead(top: Path) -> None:
    provider, env = _scenario(top)
    # a link in a safe directory to a library in a directory anyone can write
    open_dir = top / "open"
    target = _supply(open_dir, provider, mode=0o777)
    safe = top / "safe"
    safe.mkdir()
    (safe / SONAME).symlink_to(target)
    rc, _, lines = _overlay(safe, env)
    reason = (
        f"in {open_dir}, a directory anyone can write (where the symbolic link {safe}/{SONAME} "
        "leads)"
    )
    assert rc == 1 and _refused(lines, safe / SONAME, reason), lines
    open_dir.chmod(0o755)
    rc, doc, _ = _overlay(safe, env)
    assert rc == 0 and doc is not None and doc["libraries"][0]["target"] == str(target)
    # the search path itself a link, into a directory another user owns
    theirs = top / "theirs"
    theirs.mkdir()
    (theirs / "lib").symlink_to(open_dir)
    os.chown(theirs, DAEMON, DAEMON)
    theirs.chmod(0o555)
    linked = top / "linked"
    linked.symlink_to(theirs / "lib")
    rc, _, lines = _overlay(linked, env)
    reason = f"under {theirs}, a directory owned by daemon (uid {DAEMON}) (where the symbolic link {linked} leads)"
    assert rc == 1 and _refused(lines, linked / SONAME, reason), lines
    # a link in a sticky directory, owned by another user: only they may replace it, and they can
    sticky = top / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / SONAME).symlink_to(target)
    os.lchown(sticky / SONAME, NOBODY, NOBODY)
    rc, _, lines = _overlay(sticky, env)
    reason = (
        f"in {sticky}, a sticky directory where {sticky}/{SONAME} belongs to nobody "
        f"(uid {NOBODY}), who can replace it"
    )
    assert rc == 1 and _refused(lines, sticky / SONAME, reason), lines
    assert _sh_as(NOBODY, f"ln -sfn /nonexistent {sticky}/{SONAME}").returncode == 0
    # the same link, root's own: nobody else may touch it
    (sticky / SONAME).unlink()
    (sticky / SONAME).symlink_to(target)
    assert _sh_as(NOBODY, f"ln -sfn /nonexistent {sticky}/{SONAME}").returncode != 0
    rc, doc, _ = _overlay(sticky, env)
    assert rc == 0 and doc is not None


def test_as_an_unprivileged_user_their_own_files_count_and_another_users_do_not(top: Path) -> None:
    """vkdoctor run as nobody: "you" is nobody now; root's and nobody's are trusted, daemon's not."""
    provider, env = _scenario(top)
    cache = top / "nobodycache"
    cache.mkdir(mode=0o700)
    os.chown(cache, NOBODY, NOBODY)
    env["XDG_CACHE_HOME"] = str(cache)
    own = top / "own"
    lib = _supply(own, provider, owner=NOBODY)
    rc, doc, lines = _overlay(own, env, nobody=True)
    assert rc == 0 and doc is not None, lines
    assert doc["dir"].startswith(f"{cache}/vkdoctor/overlays/")
    assert Path(doc["dir"]).stat().st_uid == NOBODY
    assert doc["libraries"][0]["target"] == str(lib)
    theirs = top / "theirs"
    lib = _supply(theirs, provider, owner=DAEMON, mode=0o555)
    rc, doc, lines = _overlay(theirs, env, nobody=True)
    assert rc == 1 and doc is None
    assert _refused(lines, lib, f"in {theirs}, a directory owned by daemon (uid {DAEMON})"), lines
    # and nobody's own directory, trusted when nobody runs vkdoctor, is not trusted by root
    rc, doc, lines = _overlay(own, {**env, "XDG_CACHE_HOME": str(top / "rootcache")})
    assert rc == 1
    assert _refused(lines, own / SONAME, f"in {own}, a directory owned by nobody (uid {NOBODY})")


# --- the store ------------------------------------------------------------------------------------


def _note(lines: list[str]) -> str:
    (note,) = [ln.removeprefix("store: ") for ln in lines if ln.startswith("store: ")]
    return note


def test_a_cache_under_a_directory_another_user_owns_is_not_used(top: Path) -> None:
    """Item: whoever owns a directory above the store renames it and plants their own overlay
    behind the printed path. The run keeps its overlay in the runtime directory instead."""
    provider, env = _scenario(top)
    own = top / "own"
    _supply(own, provider, owner=NOBODY)
    theirs = top / "theirs"
    theirs.mkdir(mode=0o755)
    cache = theirs / "cache"  # nobody's own cache, in daemon's directory
    cache.mkdir(mode=0o700)
    os.chown(cache, NOBODY, NOBODY)
    os.chown(theirs, DAEMON, DAEMON)
    runtime = top / "run"
    runtime.mkdir(mode=0o700)
    os.chown(runtime, NOBODY, NOBODY)
    env.update(XDG_CACHE_HOME=str(cache), XDG_RUNTIME_DIR=str(runtime))
    rc, doc, lines = _overlay(own, env, nobody=True)
    assert rc == 0 and doc is not None, lines
    assert doc["dir"].startswith(f"{runtime}/vkdoctor/overlays/")
    assert _note(lines) == (
        f"vkdoctor will not keep its store in {cache}/vkdoctor: under {theirs}, a directory "
        f"owned by daemon (uid {DAEMON}); whoever can change that directory can swap the store, "
        f"and with it the code your processes load; using {runtime}/vkdoctor instead (private "
        "to you, emptied when you log out)"
    )
    assert not (cache / "vkdoctor").exists()  # nothing was created there
    # why: daemon renames the cache away and plants its own in its place
    attack = _sh_as(DAEMON, f"mv {cache} {theirs}/old && mkdir {cache}")
    assert attack.returncode == 0, attack.stderr
    # the same cache, in a directory of nobody's own: used, and no note
    shutil.rmtree(theirs / "old")
    os.chown(theirs, NOBODY, NOBODY)
    os.chown(cache, NOBODY, NOBODY)
    rc, doc, lines = _overlay(own, env, nobody=True)
    assert rc == 0 and doc is not None and doc["dir"].startswith(f"{cache}/vkdoctor/overlays/")
    assert not [ln for ln in lines if ln.startswith("store: ")]


def test_a_cache_in_a_shared_directory_falls_back_to_a_fresh_private_one(top: Path) -> None:
    provider, env = _scenario(top)
    own = top / "own"
    _supply(own, provider)
    shared = top / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # anyone may write it, and it is not sticky
    env["XDG_CACHE_HOME"] = str(shared / "cache")
    rc, doc, lines = _overlay(own, env)
    assert rc == 0 and doc is not None, lines
    fresh = Path(doc["dir"]).parent.parent
    try:
        assert fresh.parent == Path("/tmp") and fresh.name.startswith("vkdoctor-0-")
        assert fresh.stat().st_mode & 0o777 == 0o700
        assert _note(lines).startswith(
            f"vkdoctor will not keep its store in {shared}/cache/vkdoctor: under {shared}, a "
            "directory anyone can write;"
        )
        assert _note(lines).endswith(
            f"using {fresh} instead, a new private directory for this run only (remove it when "
            f"no program started under this overlay runs: rm -rf {fresh})"
        )
        assert not (shared / "cache").exists()
    finally:
        shutil.rmtree(fresh)
    # sticky, as /tmp is: only the entry's owner (root) may rename it; used
    shared.chmod(0o1777)
    rc, doc, lines = _overlay(own, env)
    assert rc == 0 and doc is not None and doc["dir"].startswith(f"{shared}/cache/vkdoctor/")
    # through a symbolic link into a directory anyone can write: not used
    shutil.rmtree(shared / "cache")
    shared.chmod(0o777)
    (top / "cachelink").symlink_to(shared)
    env["XDG_CACHE_HOME"] = str(top / "cachelink" / "cache")
    rc, doc, lines = _overlay(own, env)
    assert rc == 0 and doc is not None
    fresh = Path(doc["dir"]).parent.parent
    shutil.rmtree(fresh)
    assert f"(where the symbolic link {top}/cachelink leads)" in _note(lines), lines
    # an ACL entry of another user's on a directory above it: not used
    shared.chmod(0o755)
    lab.run(["setfacl", "-m", f"u:{NOBODY}:rwx", str(shared)])
    rc, doc, lines = _overlay(own, env)
    assert rc == 0 and doc is not None
    shutil.rmtree(Path(doc["dir"]).parent.parent)
    assert f"a directory nobody (uid {NOBODY}) through an ACL entry can write" in _note(lines)


def test_exec_works_for_a_user_whose_home_cannot_be_written(top: Path) -> None:
    """nobody's home is /nonexistent: the cache cannot be created, a fresh private directory is
    used, and the program really loads the driver under the overlay."""
    provider, env = _scenario(top)
    own = top / "own"
    _supply(own, provider)
    drv = top / "drv" / "libvulkan_wob.so"
    env.pop("XDG_CACHE_HOME")
    env["HOME"] = "/nonexistent"
    load = f"import ctypes, os; ctypes.CDLL({str(drv)!r}); print(os.environ['LD_LIBRARY_PATH'])"
    # the system's python: this interpreter may live where nobody cannot run it (under /root)
    exec_ = ["python", "-m", "vkdoctor", "exec", "--search-path", str(own)]
    proc = as_nobody([*exec_, "--", "/usr/bin/python3", "-c", load], env=env)
    assert proc.returncode == 0, proc.stderr
    fresh = Path(proc.stdout.strip().split("/overlays/")[0])
    try:
        assert fresh.parent == Path("/tmp") and fresh.name.startswith(f"vkdoctor-{NOBODY}-")
        assert fresh.stat().st_uid == NOBODY
        assert (
            "vkdoctor exec: store: cannot create vkdoctor's store /nonexistent/.cache/vkdoctor: "
            f"permission denied; using {fresh} instead"
        ) in proc.stderr
    finally:
        shutil.rmtree(fresh)


def test_check_says_why_a_candidate_is_refused_and_where_the_overlay_went(top: Path) -> None:
    from tests.conftest import run_json

    provider, env = _scenario(top)
    theirs = top / "theirs"
    lib = _supply(theirs, provider, owner=NOBODY, mode=0o555, lib_owner=0)
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKO", "--search-path", str(theirs)], env=env
    )
    (vko3,) = [f for f in doc["findings"] if f["code"] == "VKO003"]
    assert f"in {theirs}, a directory owned by nobody (uid {NOBODY})" in vko3["message"]
    assert vko3["remedy"].startswith(f"Copy {SONAME} to a directory only you (or root) can change")
    assert vko3["evidence"]["path"] == str(lib)
    # a good library, and a cache in a directory anyone can write: the overlay is built elsewhere
    own = top / "own"
    _supply(own, provider)
    shared = top / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env["XDG_CACHE_HOME"] = str(shared / "cache")
    _, doc = run_json(
        ["check", "--no-probe", "--select", "VKO,VKL", "--search-path", str(own)], env=env
    )
    # (the fake driver has no Vulkan entry points: the overlay works, the driver then fails)
    (vko1,) = [f for f in doc["findings"] if f["code"] == "VKO001"]
    overlay = vko1["evidence"]["overlay"]["dir"]
    fresh = Path(overlay).parent.parent
    try:
        assert fresh.name.startswith("vkdoctor-0-") and not (shared / "cache").exists()
        note = vko1["evidence"]["store_note"]
        assert note.startswith(f"vkdoctor will not keep its store in {shared}/cache/vkdoctor")
        assert f"It is not in vkdoctor's cache: {note}." in vko1["message"]
        # the library checks, run under the overlay, know it for vkdoctor's own
        texts = [f["title"] for f in doc["findings"]]
        assert f"{SONAME} from vkdoctor's overlay {overlay}" in texts, texts
    finally:
        shutil.rmtree(fresh)


# --- what a chosen file loads in turn -----------------------------------------------------------


def _runpath_scenario(top: Path, runpath: str) -> tuple[Path, Path, dict[str, str]]:
    """A driver that needs libvkrtest.so.1, which needs libvkrdep.so.2: a build of the first
    whose DT_RUNPATH is `runpath` ($ORIGIN for a folder of its own), in top/search, and one
    of the second. (The search folder, the dependency's build, the environment.)"""
    from tests.elfbuild import build_lib

    dep = build_lib(
        top / "build" / "libvkrdep.so.2",
        soname="libvkrdep.so.2",
        source="int vkr_dep(void){return 2;}\n",
    )
    first = build_lib(
        top / "search" / "libvkrtest.so.1",
        soname="libvkrtest.so.1",
        source="int vkr_dep(void); int vkr_test(void){return vkr_dep()+1;}\n",
        link=[dep],
        runpath=[runpath],
    )
    drv = build_lib(
        top / "drv" / "libvulkan_vkr.so",
        source="int vkr_test(void); int vkr(void){return vkr_test();}\n",
        link=[first, lab.LVP],
    )
    (top / "icd").mkdir()
    manifest = lab.manifest(top / "icd" / "vkr.json", drv)
    cache = top / "rootcache"
    cache.mkdir(mode=0o700)
    return first.parent, dep, {"VK_DRIVER_FILES": str(manifest), "XDG_CACHE_HOME": str(cache)}


def test_a_chosen_file_whose_runpath_leads_to_another_users_folder_is_refused(top: Path) -> None:
    """libvkrtest.so.1 in a safe search folder, but its DT_RUNPATH points at a folder nobody
    owns, where ld.so finds its libvkrdep.so.2: nobody could swap that file and run code in
    every Vulkan program under the overlay. The overlay refuses the file, naming the folder; the
    same layout with a root-owned folder is accepted and runs."""
    theirs = top / "theirs"
    search, dep, env = _runpath_scenario(top, str(theirs))
    theirs.mkdir()
    shutil.copy(dep, theirs / dep.name)
    os.chown(theirs, NOBODY, NOBODY)
    os.chown(theirs / dep.name, NOBODY, NOBODY)
    assert (
        _sh_as(NOBODY, f"cp {dep} {theirs}/x && mv -f {theirs}/x {theirs / dep.name}").returncode
        == 0
    )
    code, doc, lines = _overlay(search, env)
    assert code == 1 and not (doc or {}).get("ld_library_path"), (code, doc)
    reason = next(ln for ln in lines if "makes ld.so load libvkrdep.so.2" in ln)
    assert f"from {theirs / dep.name}: in {theirs}, a directory owned by nobody" in reason, reason

    os.chown(theirs, 0, 0)
    os.chown(theirs / dep.name, 0, 0)
    code, doc, _ = _overlay(search, env)
    assert code == 0 and doc is not None and doc["ld_library_path"], doc
    ran = run_vkdoctor(
        ["exec", "--search-path", str(search), "--", "vulkaninfo", "--summary"], env=env
    )
    assert ran.returncode == 0 and "deviceName" in ran.stdout, ran.stderr


def test_a_chosen_file_that_finds_its_dependency_at_origin_brings_it_into_the_overlay(
    top: Path,
) -> None:
    """libvkrtest.so.1 finds libvkrdep.so.2 through DT_RUNPATH $ORIGIN. Linked into the overlay,
    its $ORIGIN is the overlay's folder, where ld.so looks for the dependency: the overlay holds
    both, and vulkaninfo under `exec` (the oracle) lists the device."""
    search, dep, env = _runpath_scenario(top, "$ORIGIN")
    shutil.copy(dep, search / dep.name)
    code, doc, _ = _overlay(search, env)
    assert code == 0 and doc is not None, doc
    overlay = Path(doc["ld_library_path"].split(":")[0])
    assert sorted(p.name for p in overlay.iterdir()) == ["libvkrdep.so.2", "libvkrtest.so.1"]
    ran = run_vkdoctor(
        ["exec", "--search-path", str(search), "--", "vulkaninfo", "--summary"], env=env
    )
    assert ran.returncode == 0 and "deviceName" in ran.stdout, ran.stderr


def test_a_runpath_folder_another_user_can_still_create_is_refused(top: Path) -> None:
    """libvkrtest.so.1 in a safe search folder, root's, whose DT_RUNPATH begins with a build
    folder that does not exist, in a sticky world-writable directory (a leaked build path under
    /tmp), then a root-owned folder where ld.so finds its libvkrdep.so.2 today. Nobody creates
    the build folder and a libvkrdep.so.2 whose constructor runs their code: vulkaninfo under
    that LD_LIBRARY_PATH runs it (done for real below). The overlay refuses the file, naming the
    folder and who can create it; with the sticky directory made root's alone it is accepted."""
    shared = top / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    leaked = shared / "build" / "lib"
    safe = top / "safe"
    search, dep, env = _runpath_scenario(top, f"{leaked}:{safe}")
    safe.mkdir()
    shutil.copy(dep, safe / dep.name)
    code, doc, lines = _overlay(search, env)
    assert code == 1 and not (doc or {}).get("ld_library_path"), (code, doc, lines)
    reason = next(ln for ln in lines if f"search {leaked}" in ln)
    assert f"{shared / 'build'} does not exist, and anyone can create it in {shared}" in reason

    # the attack it stops, for real: nobody plants the folder and a library of the same name
    marker = top / "ran-as-nobody"
    evil_src = top / "evil.c"
    evil_src.write_text(
        "#include <stdio.h>\nint vkr_dep(void){return 2;}\n"
        f'__attribute__((constructor)) static void own(void){{FILE*f=fopen("{marker}","w");'
        'if(f){fputs("pwned",f);fclose(f);}}\n'
    )
    built = top / "evil.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libvkrdep.so.2", "-o", str(built), str(evil_src)],
        check=True,
    )
    built.chmod(0o644)
    planted = _sh_as(NOBODY, f"mkdir -p {leaked} && cp {built} {leaked}/libvkrdep.so.2")
    assert planted.returncode == 0, planted.stderr
    ran = subprocess.run(
        ["vulkaninfo", "--summary"],
        env={**env, "LD_LIBRARY_PATH": str(search), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert marker.exists(), ran.stderr[-500:]
    marker.unlink()
    shutil.rmtree(shared / "build")

    shared.chmod(0o755)
    code, doc, _ = _overlay(search, env)
    assert code == 0 and doc is not None and doc["ld_library_path"], doc


def test_a_package_file_another_user_owns_is_not_unpacked(top: Path) -> None:
    """--from-package with a .deb that nobody owns (or that lies in a folder nobody can write):
    nobody could swap it between vkdoctor's look and the next program's load. It is refused
    like a --search-path file, with the reason; the same .deb of root's is used."""
    provider, env = _scenario(top)
    tree = top / "pkgtree" / "usr/lib/x86_64-linux-gnu"
    tree.mkdir(parents=True)
    shutil.copy(provider, tree / SONAME)
    deb = lab.deb(top / "pkgtree", top / "libwob1.deb", name="libwob1")
    os.chown(deb, NOBODY, NOBODY)
    args = ["overlay", "--from-package", str(deb), "--format", "json"]
    proc = run_vkdoctor(args, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"{deb} is not used: owned by nobody (uid {NOBODY}), neither you nor root" in proc.stderr
    assert not (json.loads(proc.stdout) or {}).get("ld_library_path")

    os.chown(deb, 0, 0)
    proc = run_vkdoctor(args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ld_library_path"]


def test_a_package_another_user_drops_in_a_folder_they_can_write_is_not_unpacked(
    top: Path,
) -> None:
    """nobody's drop folder, the place a download lands: nobody puts a .deb of libwob.so.1
    whose constructor runs their code. Whether the file is theirs or a copy root made there, it
    is refused, naming the file and who can change it; `exec` runs nothing of it."""
    _, env = _scenario(top)
    marker = top / "ran-as-root"
    src = top / "evil.c"
    src.write_text(
        "#include <stdio.h>\nint wob_fn(void){return 42;}\n"
        f'__attribute__((constructor)) static void own(void){{FILE*f=fopen("{marker}","w");'
        'if(f){fputs("pwned",f);fclose(f);}}\n'
    )
    tree = top / "evilpkg" / "usr/lib/x86_64-linux-gnu"
    tree.mkdir(parents=True)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{SONAME}", "-o", str(tree / SONAME), str(src)],
        check=True,
    )
    built = lab.deb(top / "evilpkg", top / "built.deb", name="libwob1")
    built.chmod(0o644)
    drop = top / "drop"
    drop.mkdir()
    os.chown(drop, NOBODY, NOBODY)
    planted = _sh_as(NOBODY, f"cp {built} {drop}/libwob1.deb")
    assert planted.returncode == 0, planted.stderr
    deb = drop / "libwob1.deb"
    assert deb.stat().st_uid == NOBODY
    for owner in (NOBODY, 0):
        os.chown(deb, owner, owner)
        proc = run_vkdoctor(["overlay", "--from-package", str(deb), "--format", "json"], env=env)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        assert f"{deb} is not used: " in proc.stderr, proc.stderr
        why = "owned by nobody" if owner else f"in {drop}, a directory owned by nobody"
        assert why in proc.stderr, proc.stderr
        assert not (json.loads(proc.stdout) or {}).get("ld_library_path")
        ran = run_vkdoctor(
            ["exec", "--from-package", str(deb), "--", "vulkaninfo", "--summary"], env=env
        )
        assert ran.returncode != 0 and not marker.exists(), (ran.stdout, ran.stderr)

    # the payload is live: the same .deb from a folder of root's is used, and its constructor runs
    kept = top / "kept"
    kept.mkdir()
    shutil.copy(deb, kept / deb.name)
    ran = run_vkdoctor(
        ["exec", "--from-package", str(kept / deb.name), "--", "vulkaninfo", "--summary"], env=env
    )
    assert marker.exists(), (ran.stdout, ran.stderr)


def test_a_folder_the_chosen_files_rpath_hands_down_to_a_dependency_is_refused(top: Path) -> None:
    """DT_RPATH (unlike DT_RUNPATH) is inherited: libvkrtest.so.1's RPATH is searched for what
    its dependency libvkrdep.so.2 needs (libvkrleaf.so.3), two levels down from the driver. Its
    RPATH lists a root folder that has libvkrdep.so.2, then a missing build folder in a sticky
    world-writable directory, then the root folder that has libvkrleaf.so.3: only the leaf's
    lookup walks through the build folder. nobody creates it with a libvkrleaf.so.3 whose
    constructor runs their code (vulkaninfo runs it, done for real below); the overlay refuses
    the file, naming the file the user gave and the folder."""
    from tests.elfbuild import build_lib

    shared = top / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    leaked, safe, safe2 = shared / "build" / "lib", top / "safe", top / "safe2"
    leaf = build_lib(
        safe2 / "libvkrleaf.so.3",
        soname="libvkrleaf.so.3",
        source="int vkr_leaf(void){return 3;}\n",
    )
    dep = build_lib(
        safe / "libvkrdep.so.2",
        soname="libvkrdep.so.2",
        source="int vkr_leaf(void); int vkr_dep(void){return vkr_leaf()+2;}\n",
        link=[leaf],
    )
    first = build_lib(
        top / "search" / "libvkrtest.so.1",
        soname="libvkrtest.so.1",
        source="int vkr_dep(void); int vkr_test(void){return vkr_dep()+1;}\n",
        link=[dep],
        rpath=[str(safe), str(leaked), str(safe2)],
    )
    for src in (top / "search").glob("*.c"):
        src.unlink()
    drv = build_lib(
        top / "drv" / "libvulkan_vkr.so",
        source="int vkr_test(void); int vkr(void){return vkr_test();}\n",
        link=[first, lab.LVP],
    )
    (top / "icd").mkdir()
    env = {
        "VK_DRIVER_FILES": str(lab.manifest(top / "icd" / "vkr.json", drv)),
        "XDG_CACHE_HOME": str(top / "rootcache"),
    }
    (top / "rootcache").mkdir(mode=0o700)
    code, doc, lines = _overlay(first.parent, env)
    assert code == 1 and not (doc or {}).get("ld_library_path"), (code, doc, lines)
    reason = next(ln for ln in lines if f"search {leaked}" in ln)
    assert f"(from {first}'s RPATH) first: {shared / 'build'} does not exist, and anyone" in reason

    marker = top / "ran-as-nobody"
    evil_src = top / "evil.c"
    evil_src.write_text(
        "#include <stdio.h>\nint vkr_leaf(void){return 3;}\n"
        f'__attribute__((constructor)) static void own(void){{FILE*f=fopen("{marker}","w");'
        'if(f){fputs("pwned",f);fclose(f);}}\n'
    )
    built = top / "evil.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-soname,libvkrleaf.so.3", "-o", str(built), str(evil_src)],
        check=True,
    )
    built.chmod(0o644)
    planted = _sh_as(NOBODY, f"mkdir -p {leaked} && cp {built} {leaked}/libvkrleaf.so.3")
    assert planted.returncode == 0, planted.stderr
    subprocess.run(
        ["vulkaninfo", "--summary"],
        env={**env, "LD_LIBRARY_PATH": str(first.parent), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert marker.exists()
    marker.unlink()
    shutil.rmtree(shared / "build")

    shared.chmod(0o755)
    code, doc, _ = _overlay(first.parent, env)
    assert code == 0 and doc is not None and doc["ld_library_path"], doc


def test_a_link_in_a_safe_runpath_folder_that_leads_where_another_user_can_create_is_refused(
    top: Path,
) -> None:
    """libvkrtest.so.1's DT_RUNPATH begins with a root-owned 0755 folder, which holds a dangling
    link named libvkrdep.so.2 into a folder nobody has made yet in a sticky world-writable
    directory; ld.so skips the link today and finds the dependency in the next folder. Whoever
    creates that folder first gets their library loaded: the overlay refuses the file and says
    where the link leads; with the link gone it is accepted."""
    shared = top / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    safe, later = top / "safe", top / "later"
    search, dep, env = _runpath_scenario(top, f"{safe}:{later}")
    safe.mkdir()
    (safe / dep.name).symlink_to(shared / "evil" / dep.name)
    later.mkdir()
    shutil.copy(dep, later / dep.name)
    code, doc, lines = _overlay(search, env)
    assert code == 1 and not (doc or {}).get("ld_library_path"), (code, doc, lines)
    reason = next(ln for ln in lines if f"search {safe / dep.name}" in ln)
    assert f"{shared / 'evil'} does not exist, and anyone can create it in {shared}" in reason
    assert f"where the symbolic link {safe / dep.name} leads" in reason

    (safe / dep.name).unlink()
    code, doc, _ = _overlay(search, env)
    assert code == 0 and doc is not None and doc["ld_library_path"], doc
