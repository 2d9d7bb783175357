"""Facts kept across runs (vkdoctor.speed.factcache): a warm run sees every change at once, a store
nobody but the user controls is the only one read, and a broken one is ignored."""

from __future__ import annotations

import marshal
import os
import pwd
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import run_json

from vkdoctor.speed import factcache

SYSTEM_LIBZ = Path("/usr/lib/x86_64-linux-gnu/libz.so.1")


def _undefined(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == "VKL006" and f["severity"] == "fail"]


def _check(lib: Path, cache: Path) -> dict[str, Any]:
    env = {"LD_LIBRARY_PATH": str(lib.parent), "XDG_CACHE_HOME": str(cache)}
    _, doc = run_json(["check", "--no-probe", "--select", "VKL006"], env=env)
    return doc


def _store(cache: Path) -> Path:
    return cache / "vkdoctor" / "facts" / "undefined.marshal"


def _hide_crc32(lib: Path) -> None:
    """Rename the exported `crc32` in place (same inode, same size) and set the old mtime back:
    only the ctime says that the file changed."""
    st = lib.stat()
    data = lib.read_bytes()
    assert data.count(b"\0crc32\0") == 1
    with open(lib, "r+b") as f:
        f.seek(data.index(b"\0crc32\0") + 1)
        f.write(b"crc3X")
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = lib.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )


def test_a_warm_run_sees_a_file_changed_in_place_and_a_file_replaced(tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "libz.so.1"
    lib.parent.mkdir()
    shutil.copy2(SYSTEM_LIBZ, lib)
    cache = tmp_path / "cache"
    assert _undefined(_check(lib, cache)) == []
    store = _store(cache)
    assert store.stat().st_mode & 0o777 == 0o600
    assert store.parent.stat().st_mode & 0o777 == 0o700

    _hide_crc32(lib)
    (changed,) = _undefined(_check(lib, cache))
    assert "crc32" in changed["evidence"]["symbols"]

    written = store.stat().st_mtime_ns
    again = _check(lib, cache)  # warm and unchanged: answered from the store, which stays as it is
    assert _undefined(again) == [changed]
    assert store.stat().st_mtime_ns == written

    replacement = lib.with_name("libz.so.1.new")
    shutil.copy2(SYSTEM_LIBZ, replacement)
    replacement.replace(lib)
    assert _undefined(_check(lib, cache)) == []


def _forge(store: Path, old: factcache.Identity, new: factcache.Identity) -> None:
    """Give every answer about the file of identity `old` to the file of identity `new`."""
    stamp, entries = marshal.loads(store.read_bytes())
    forged = {}
    for key, value in entries.items():
        question, ids = key
        forged[(question, tuple(new if i == old else i for i in ids))] = value
    store.write_bytes(marshal.dumps((stamp, forged)))


def test_only_a_store_nobody_else_controls_is_believed(tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "libz.so.1"
    lib.parent.mkdir()
    shutil.copy2(SYSTEM_LIBZ, lib)
    cache = tmp_path / "cache"
    assert _undefined(_check(lib, cache)) == []
    good = factcache.identity(lib)
    assert good is not None
    _hide_crc32(lib)
    broken = factcache.identity(lib)
    assert broken is not None and broken != good
    store = _store(cache)
    _forge(store, good, broken)
    # the forged answer is believed from a private store: the key is what is compared
    assert _undefined(_check(lib, cache)) == []

    store.parent.chmod(0o770)  # the group could have written it
    assert len(_undefined(_check(lib, cache))) == 1
    store.parent.chmod(0o700)

    _forge(store, good, broken)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(store, nobody, -1)  # another user's file
    assert len(_undefined(_check(lib, cache))) == 1


def test_a_store_that_is_not_one_is_ignored_and_replaced(tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "libz.so.1"
    lib.parent.mkdir()
    shutil.copy2(SYSTEM_LIBZ, lib)
    _hide_crc32(lib)
    cache = tmp_path / "cache"
    store = _store(cache)
    store.parent.mkdir(parents=True, mode=0o700)
    for junk in (b"", b"\x00" * 100, marshal.dumps(("other", {})), os.urandom(4096)):
        store.write_bytes(junk)
        store.chmod(0o600)
        assert len(_undefined(_check(lib, cache))) == 1
        stamp, entries = marshal.loads(store.read_bytes())
        assert stamp[0] == factcache.FORMAT and entries


def test_a_symbolic_link_in_place_of_the_store_is_not_followed(tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "libz.so.1"
    lib.parent.mkdir()
    shutil.copy2(SYSTEM_LIBZ, lib)
    cache = tmp_path / "cache"
    _check(lib, cache)
    store = _store(cache)
    elsewhere = tmp_path / "elsewhere.marshal"
    store.replace(elsewhere)
    store.symlink_to(elsewhere)
    _hide_crc32(lib)
    assert len(_undefined(_check(lib, cache))) == 1
    assert store.is_symlink() is False  # replaced by a file of its own, never written through
    assert store.stat().st_mode & 0o777 == 0o600


def test_identity_follows_links_and_is_none_for_what_is_not_there(tmp_path: Path) -> None:
    target = tmp_path / "a"
    target.write_bytes(b"x")
    link = tmp_path / "b"
    link.symlink_to(target)
    assert factcache.identity(link) == factcache.identity(target) is not None
    assert factcache.identity(tmp_path / "missing") is None
    assert factcache.identity("bad\0name") is None


def test_a_touched_file_is_read_again_and_a_new_manifest_is_seen_by_a_warm_run(
    tmp_path: Path,
) -> None:
    lib = tmp_path / "lib" / "libz.so.1"
    lib.parent.mkdir()
    shutil.copy2(SYSTEM_LIBZ, lib)
    cache = tmp_path / "cache"
    _check(lib, cache)
    _check(lib, cache)
    store = _store(cache)
    written = store.stat().st_mtime_ns
    os.utime(lib)  # the same bytes, a new mtime: asked again, and the answer kept anew
    assert _undefined(_check(lib, cache)) == []
    assert store.stat().st_mtime_ns != written

    data = tmp_path / "data"
    icd = data / "vulkan" / "icd.d" / "vkdoctor_new_icd.json"
    icd.parent.mkdir(parents=True)
    icd.write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": "libvulkan_lvp.so", '
        '"api_version": "1.3.0"}}'
    )
    env = {"XDG_CACHE_HOME": str(cache), "XDG_DATA_HOME": str(data)}
    _, doc = run_json(["check", "--no-probe", "--select", "VKD", "--select", "VKT"], env=env)
    names = {f["evidence"].get("name") for f in doc["findings"] if f["code"] == "VKT001"}
    assert "vkdoctor_new_icd.json" in names


def test_a_warm_run_sees_a_dependency_broken_in_a_status_file_rewritten_in_place(
    tmp_path: Path,
) -> None:
    """The dpkg status file's facts (the packages, the unmet dependencies) are kept by its
    identity: an edit that keeps its inode, size and mtime is still seen (ctime)."""
    from pkgtrees import debian_skew_tree

    root = debian_skew_tree(tmp_path / "deb")
    cache = tmp_path / "cache"
    args = ["check", "--root", str(root), "--no-probe", "--select", "VKP006"]

    def unmet() -> list[str]:
        _, doc = run_json(args, env={"XDG_CACHE_HOME": str(cache)})
        return [u for f in doc["findings"] for u in f["evidence"].get("unmet", [])]

    before = unmet()
    assert unmet() == before  # warm
    status = root / "var/lib/dpkg/status"
    st = status.stat()
    text = status.read_bytes()
    # the same length: one dependency renamed to a package nobody has
    assert b"libstdc++6 (>= 12)" in text
    status.write_bytes(text.replace(b"libstdc++6 (>= 12)", b"libstdc++7 (>= 12)", 1))
    os.utime(status, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert status.stat().st_size == st.st_size
    after = unmet()
    assert len(after) == len(before) + 1 and any("libstdc++7" in u for u in after)
    assert (cache / "vkdoctor" / "facts" / "dpkg-status.marshal").is_file()


def test_dpkg_audit_is_answered_again_only_for_the_same_database(tmp_path: Path) -> None:
    """`dpkg --audit` reads the status file, updates/ and which files info/ holds: its answer
    is kept for those identities, said to be kept, and asked again after any change."""
    from pkgtrees import debian_skew_tree

    root = debian_skew_tree(tmp_path / "deb")
    cache = tmp_path / "cache"
    args = ["check", "--root", str(root), "--no-probe", "--select", "VKP006"]

    def audit() -> tuple[bool, list[str]]:
        _, doc = run_json(args, env={"XDG_CACHE_HOME": str(cache)})
        (f,) = [f for f in doc["findings"] if f["code"] == "VKP006"]
        (run,) = [r for r in f["evidence"]["runs"] if "--audit" in r["command"]]
        return bool(run.get("kept")), list(f["evidence"].get("problems", []))

    first = audit()
    assert first[0] is False
    assert audit() == (True, first[1])
    status = root / "var/lib/dpkg/status"
    text = status.read_text()
    assert "Status: install ok installed" in text
    status.write_text(
        text.replace("Status: install ok installed", "Status: install ok half-configured", 1)
    )
    kept, problems = audit()
    assert kept is False and any("half-configured" in p or "half configured" in p for p in problems)
    (root / "var/lib/dpkg/info/vkdoctor-extra.list").write_text("/\n")
    assert audit()[0] is False  # info/ changed: asked again


def _cache_ctx(root: Path, cache: Path) -> Any:
    from vkdoctor.model.context import Context, Options

    return Context(
        root=root,
        env={},
        cwd=root,
        options=Options(cache_dir=cache),
        store=factcache.FactCache(cache),
    )


def test_a_rebuilt_ld_so_cache_is_read_again_by_a_warm_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ld.so.cache parse is kept by the file's identity: the entries a warm run reads from
    the store are the parse's, and `ldconfig` writing a new cache is seen at once."""
    import subprocess

    from vkdoctor.elf.ldcache import load_cache

    root, cache = tmp_path / "root", tmp_path / "cache"
    lib = root / "opt" / "lib"
    lib.mkdir(parents=True)
    (root / "etc").mkdir()
    shutil.copy("/lib/x86_64-linux-gnu/libz.so.1", lib / "libz.so.1")
    conf = root / "etc" / "ld.so.conf"
    conf.write_text("/opt/lib\n")

    def ldconfig() -> None:
        subprocess.run(["ldconfig", "-r", str(root)], check=True, capture_output=True)

    ldconfig()
    first = load_cache(_cache_ctx(root, cache))
    factcache.save_all()
    factcache._open.clear()
    assert (cache / "facts" / "ldcache.marshal").is_file()
    with monkeypatch.context() as m:  # the warm run does not parse the file again
        m.setattr("vkdoctor.elf.ldcache.parse_cache", None)
        warm = load_cache(_cache_ctx(root, cache))
    assert first is not None and warm is not None
    assert warm.entries == first.entries and [e.name for e in warm.entries] == ["libz.so.1"]
    # the oracle: ldconfig itself says what the new cache holds
    shutil.copy("/lib/x86_64-linux-gnu/libbz2.so.1.0", lib / "libbz2.so.1.0")
    ldconfig()
    listed = subprocess.run(
        ["ldconfig", "-p", "-C", str(root / "etc" / "ld.so.cache")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    factcache._open.clear()
    again = load_cache(_cache_ctx(root, cache))
    assert again is not None
    names = sorted(e.name for e in again.entries)
    assert names == ["libbz2.so.1.0", "libz.so.1"]
    assert all(name in listed for name in names)


def test_ld_so_s_directories_are_read_again_from_a_replaced_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from vkdoctor.elf.platform import _compiled_in_dirs

    root, cache = tmp_path / "root", tmp_path / "cache"
    ldso = root / "lib64" / "ld-linux-x86-64.so.2"
    ldso.parent.mkdir(parents=True)
    shutil.copy("/lib64/ld-linux-x86-64.so.2", ldso)
    real = _compiled_in_dirs(_cache_ctx(root, cache), "/lib64/ld-linux-x86-64.so.2")
    assert "/usr/lib/x86_64-linux-gnu" in real
    factcache.save_all()
    factcache._open.clear()
    with monkeypatch.context() as m:  # from the store: the file is not searched again
        m.setattr("vkdoctor.elf.platform._SYSDIRS", re.compile(b"never"))
        assert _compiled_in_dirs(_cache_ctx(root, cache), "/lib64/ld-linux-x86-64.so.2") == real
    data = ldso.read_bytes().replace(b"/usr/lib/x86_64-linux-gnu/", b"/usr/lib/x86_64-linux-GNU/")
    ldso.unlink()
    ldso.write_bytes(data)
    factcache._open.clear()
    changed = _compiled_in_dirs(_cache_ctx(root, cache), "/lib64/ld-linux-x86-64.so.2")
    assert "/usr/lib/x86_64-linux-GNU" in changed


def _spoil(store: Path, value: object) -> None:
    """Every value of the store replaced by `value`, its stamp kept: a store of another shape
    that the stamp does not catch."""
    stamp, entries = marshal.loads(store.read_bytes())
    store.write_bytes(marshal.dumps((stamp, dict.fromkeys(entries, value))))


@pytest.mark.parametrize(
    "value",
    [
        "garbage",
        (1, 2, 3, 4, 5),
        {"a": 1},
        0,
        [],
        ["vkdoctor.elf.reader:ElfInfo", ("path",), "/lib/x"],  # a record of other fields
        ["os:system", ("command",), "true"],  # not a record
    ],
)
def test_a_store_of_another_shape_is_computed_again(tmp_path: Path, value: object) -> None:
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    _, fresh = run_json(["check", "--no-probe"], env=env)
    facts = cache / "vkdoctor" / "facts"
    for name in ("ldcache", "ldso-dirs", "undefined", "elf", "load-request"):
        if (facts / f"{name}.marshal").exists():
            _spoil(facts / f"{name}.marshal", value)
    proc, again = run_json(["check", "--no-probe"], env=env)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
    assert again["status"] == fresh["status"] == "ok"
    assert [(f["code"], f["severity"]) for f in again["findings"]] == [
        (f["code"], f["severity"]) for f in fresh["findings"]
    ]


def test_a_fifo_in_place_of_a_store_does_not_stop_the_run(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    run_json(["check", "--no-probe"], env=env)
    facts = cache / "vkdoctor" / "facts"
    for name in ("ldcache", "elf"):
        (facts / f"{name}.marshal").unlink()
        os.mkfifo(facts / f"{name}.marshal")
    proc, doc = run_json(["check", "--no-probe"], env=env, timeout=60)
    assert proc.returncode == 0 and doc["status"] == "ok"


def test_a_context_keeps_nothing_unless_the_command_layer_gives_it_a_store(tmp_path: Path) -> None:
    """The Context's own store keeps nothing: a cache directory alone does not make a store."""
    from vkdoctor.elf.reader import read_elf
    from vkdoctor.model.context import Context, Options
    from vkdoctor.model.factstore import NOTHING_KEPT

    cache = tmp_path / "cache"
    ctx = Context(options=Options(cache_dir=cache))
    assert ctx.store is NOTHING_KEPT
    read_elf(ctx, str(SYSTEM_LIBZ))
    factcache.save_all()
    assert not (cache / "facts").exists()
    given = _cache_ctx(Path("/"), cache)
    read_elf(given, str(SYSTEM_LIBZ))
    factcache.save_all()
    factcache._open.clear()
    assert (cache / "facts" / "elf.marshal").is_file()


def test_an_answer_read_while_its_file_changed_is_not_kept(tmp_path: Path) -> None:
    from vkdoctor.model.factstore import FactKind

    kind = FactKind("test-kind", (__file__,))
    f = tmp_path / "f"
    f.write_text("one")
    store = factcache.FactCache(tmp_path / "cache")
    assert store.get(kind, (f,), "q") is None
    f.write_text("two, longer")  # changed between the question and the answer
    store.put(kind, (f,), "q", "from one")
    assert store.get(kind, (f,), "q") is None
    store.put(kind, (f,), "q", "from two")
    assert store.get(kind, (f,), "q") == "from two"
    assert store.get(kind, (f,), "another question") is None
    assert store.get(kind, (f, tmp_path / "missing"), "q") is None
    factcache._open.clear()


def test_records_come_back_equal_and_shared_as_they_were_kept(tmp_path: Path) -> None:
    """The one encoder: records (nested, shared, in tuples and dicts) as marshal carries them,
    written to the store and read back by another process's worth of objects."""
    from vkdoctor.model.factstore import FactKind
    from vkdoctor.packages.model import Package, Relation

    kind = FactKind("test-records", (__file__,))
    libc = Relation(name="libc6", op=">=", version="2.36")
    pkgs = tuple(
        Package(
            family="dpkg",
            name=f"p{i}",
            version="1.0",
            arch="amd64",
            source=f"p{i}",
            source_version="1.0",
            depends=((libc,), (Relation(name="a"), Relation(name="b"))),
        )
        for i in range(3)
    )
    value = {"packages": pkgs, "raw": (b"\x00", 1.5, None, True)}
    f = tmp_path / "f"
    f.write_text("x")
    factcache.FactCache(tmp_path / "cache").put(kind, (f,), (), value)
    factcache.save_all()
    factcache._open.clear()
    back = factcache.FactCache(tmp_path / "cache").get(kind, (f,))
    assert back == value and back["packages"] is not pkgs
    first, second = (p.depends[0][0] for p in back["packages"][:2])
    assert first is second  # one Relation object, as it was kept
    factcache._open.clear()


def test_a_value_the_store_cannot_carry_is_not_kept(tmp_path: Path) -> None:
    from vkdoctor.model.factstore import FactKind

    kind = FactKind("test-refused", (__file__,))
    f = tmp_path / "f"
    f.write_text("x")
    store = factcache.FactCache(tmp_path / "cache")
    for value in ([1, 2], {1, 2}, Path("/x"), (object(),)):
        store.put(kind, (f,), "q", value)
        assert store.get(kind, (f,), "q") is None
    factcache._open.clear()
