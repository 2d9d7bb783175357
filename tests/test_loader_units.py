"""The loader emulation's rules, one by one, on trees in tmp_path (no real loader needed here)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from vkdoctor.loader import cjson, fileio
from vkdoctor.loader.fields import parse_version, posix_dirname, resolve_library, variant_of
from vkdoctor.loader.filters import matches, parse_filter, parse_layer_disable
from vkdoctor.loader.icd import driver_scan
from vkdoctor.loader.search import driver_plan, implicit_layer_plan
from vkdoctor.loader.version import loader_version
from vkdoctor.model.context import Context


def ctx(env: dict[str, str] | None = None, **kw) -> Context:
    return Context(env=env or {}, **kw)


def test_default_search_list_and_origins():
    plan = driver_plan(ctx({"HOME": "/home/u"}))
    assert [(e.path, e.origin) for e in plan.entries] == [
        ("/home/u/.config/vulkan/icd.d", "HOME (XDG_CONFIG_HOME unset: $HOME/.config)"),
        ("/etc/xdg/vulkan/icd.d", "default XDG_CONFIG_DIRS"),
        ("/etc/vulkan/icd.d", "SYSCONFDIR"),
        ("/home/u/.local/share/vulkan/icd.d", "HOME (XDG_DATA_HOME unset: $HOME/.local/share)"),
        ("/usr/local/share/vulkan/icd.d", "default XDG_DATA_DIRS"),
        ("/usr/share/vulkan/icd.d", "default XDG_DATA_DIRS"),
    ]


def test_xdg_lists_split_dedup_and_json_entries():
    env = {"XDG_DATA_DIRS": "/a::/b/:/a:/c/x.json", "XDG_CONFIG_HOME": "/h1:/h2"}
    paths = [e.path for e in driver_plan(ctx(env)).entries]
    assert paths == [
        "/h1/vulkan/icd.d",
        "/h2/vulkan/icd.d",
        "/etc/xdg/vulkan/icd.d",
        "/etc/vulkan/icd.d",
        "/a/vulkan/icd.d",
        "/b/vulkan/icd.d",
        "/c/x.json",
    ]
    assert [e.path for e in implicit_layer_plan(ctx(env)).entries][
        -2
    ] == "/b/vulkan/implicit_layer.d"


def test_elevated_process_ignores_secure_variables():
    env = {
        "HOME": "/home/u",
        "XDG_DATA_DIRS": "/x",
        "VK_DRIVER_FILES": "/evil.json",
        "VK_LOADER_DRIVERS_DISABLE": "*",
    }
    plan = driver_plan(ctx(env, elevated=True))
    assert [e.path for e in plan.entries] == [
        "/etc/xdg/vulkan/icd.d",
        "/etc/vulkan/icd.d",
        "/usr/local/share/vulkan/icd.d",
        "/usr/share/vulkan/icd.d",
    ]
    assert ("VK_DRIVER_FILES", "ignored: the process runs elevated (setuid/setgid)") in plan.ignored
    assert not driver_scan(ctx(env, elevated=True, root=Path("/nonexistent-root"))).disable.active


@pytest.mark.parametrize(
    ("value", "name", "expected"),
    [
        ("lvp*", "LVP_icd.x86_64.json", True),
        ("lvp_icd", "lvp_icd.x86_64.json", False),
        ("*x86_64.json", "lvp_icd.x86_64.json", True),
        ("*icd*", "lvp_icd.x86_64.json", True),
        ("**", "a.json", True),
        ("~all~", "a.json", True),
        ("~other~", "a.json", False),
        ("a.json,b.json", "B.JSON", True),
        ("*toolongtomatchanything.json", "a.json", False),
    ],
)
def test_filter_globs(value, name, expected):
    assert matches(name, parse_filter("V", value)) is expected


def test_layer_disable_specials_are_class_flags():
    f = parse_layer_disable("VK_LOADER_LAYERS_DISABLE", "~implicit~,VK_LAYER_X*")
    assert f.implicit and not f.all and matches("vk_layer_xyz", f)


def test_cjson_is_lenient_where_the_loader_is():
    node = cjson.parse(b'{"a": "x\x01y", "a": 2, "b": -} trailing')
    assert cjson.get(node, "a").string == b"x\x01y"  # first duplicate wins, raw control char kept
    assert cjson.field_text(cjson.get(node, "a")) == b"xu0001y"
    assert cjson.get(node, "A") is None  # case-sensitive
    assert cjson.get(node, "b").number == 0
    with pytest.raises(cjson.ParseError):
        cjson.parse(b'{"a": NaN}')
    with pytest.raises(cjson.ParseError):
        cjson.parse(b'{"a": 1,}')
    with pytest.raises(cjson.ParseError):
        cjson.parse(b"   ")
    assert cjson.parse(b'{"a":1}\0{{{').type == cjson.OBJECT


def test_cjson_depth_and_size_are_bounded():
    start = time.monotonic()
    with pytest.raises(cjson.TooDeep):
        cjson.parse(b"[" * 900_000, max_depth=10_000)
    with pytest.raises(cjson.TooMany):
        cjson.parse(b"[" + b"0," * 400_000 + b"0]")
    assert time.monotonic() - start < 10


def test_versions_and_library_rules():
    assert variant_of(parse_version(b'"1.1.2.3"')) == 1
    assert variant_of(parse_version(b'"1.3.230"')) == 0
    assert posix_dirname("/a/b.json") == "/a"
    assert posix_dirname("b.json") == "."
    assert posix_dirname("/b.json") == "/"
    assert resolve_library("/m/x.json", "lib/a.so") == ("/m/lib/a.so", "relative")
    assert resolve_library("rel/x.json", "./a.so") == ("rel/./a.so", "relative")
    assert resolve_library("/m/x.json", "liba.so") == ("liba.so", "bare")


def test_read_manifest_bad_input_is_bounded_and_named(tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "big.json").write_bytes(b" " * (fileio.MAX_MANIFEST_BYTES + 1))
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere")
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "empty.json").write_bytes(b"")
    start = time.monotonic()
    got = {n: fileio.read_manifest(tmp_path / n).problem for n in os.listdir(tmp_path)}
    assert time.monotonic() - start < 2
    assert got == {
        "fifo.json": fileio.FIFO,
        "big.json": fileio.TOO_LARGE,
        "loop.json": fileio.LOOP,
        "dangling.json": fileio.MISSING,
        "dir.json": fileio.DIRECTORY,
        "empty.json": fileio.EMPTY,
    }
    assert fileio.read_manifest(Path("/dev/null")).problem == fileio.SPECIAL


def _fake_loader_root(root: Path, version: str) -> None:
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    # a real ELF, so that the ld.so emulation accepts it; the name carries the version
    shutil.copyfile("/usr/lib/x86_64-linux-gnu/libvulkan.so.1", lib / f"libvulkan.so.{version}")
    (lib / "libvulkan.so.1").symlink_to(f"libvulkan.so.{version}")


@pytest.mark.parametrize(("version", "aborts"), [("1.3.239", True), ("1.3.268", False)])
def test_loader_version_from_root_decides_the_json_rule(tmp_path, version, aborts):
    _fake_loader_root(tmp_path, version)
    icd = tmp_path / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    (icd / "bad.json").write_text('{"file_format_version": "1.0.0",}')
    c = ctx({}, root=tmp_path)
    v = loader_version(c)
    assert (v.path, v.file, v.json_error_aborts) == (
        "/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
        f"libvulkan.so.{version}",
        aborts,
    )
    scan = driver_scan(c)
    assert (scan.aborted_by is not None) is aborts
    assert scan.drivers[0].manifest == "/usr/share/vulkan/icd.d/bad.json"


def test_root_links_are_followed_inside_the_root(tmp_path):
    """An image's absolute links (alternatives) point into the image, never at the host."""
    from vkdoctor.loader.rootpath import host_path

    root = tmp_path / "img"
    (root / "opt/nv/lib").mkdir(parents=True)
    (root / "etc/alternatives").mkdir(parents=True)
    icd = root / "usr/share/vulkan/icd.d"
    icd.mkdir(parents=True)
    lib = root / "opt/nv/lib/libvk_fake.so"
    lib.write_bytes(
        b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + (62).to_bytes(2, "little") + bytes(64)
    )
    (root / "opt/nv/icd.json").write_text(
        '{"file_format_version": "1.0.0", "ICD": {"library_path": "lib/libvk_fake.so", "api_version": "1.3.0"}}'
    )
    (root / "etc/alternatives/nv.json").symlink_to("/opt/nv/icd.json")
    (icd / "nv.json").symlink_to("/etc/alternatives/nv.json")
    (icd / "loop.json").symlink_to("/usr/share/vulkan/icd.d/loop.json")
    c = ctx({}, root=root)
    assert host_path(c, "/usr/share/vulkan/icd.d/nv.json") == root / "opt/nv/icd.json"
    by_name = {d.basename: d for d in driver_scan(c).drivers}
    nv = by_name["nv.json"]
    # the loader joins library_path to the directory of the manifest path it holds, not the target's
    assert (nv.outcome, nv.library) == (
        "library-missing",
        "/usr/share/vulkan/icd.d/lib/libvk_fake.so",
    )
    assert by_name["loop.json"].outcome == "open-failed"


def test_a_directory_entry_the_loader_cannot_resolve_is_named_with_its_directory(tmp_path):
    """The loader lists an unresolvable entry by its bare name and opens that in the current
    directory; VKD004 names the real file and says why."""
    from vkdoctor.checks.drivers import DriverManifestContent

    d = tmp_path / "icd.d"
    d.mkdir()
    (d / "self.json").symlink_to("self.json")
    (d / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    c = ctx({"VK_DRIVER_FILES": str(d)}, cwd=tmp_path)
    assert sorted(x.manifest for x in driver_scan(c).drivers) == ["dangling.json", "self.json"]
    found = {f.title: f for f in DriverManifestContent().run(c)}
    loop = found[f"{d}/self.json is skipped by the loader"]
    assert loop.message.startswith(f"{d}/self.json is a symbolic link loop: ")
    assert f"bare name, self.json, and opens that in the current directory ({tmp_path})" in (
        loop.message
    )
    assert loop.fix() == f"fix or remove {d}/self.json"
    dangling = found[f"{d}/dangling.json is skipped by the loader"]
    assert dangling.message.startswith(f"{d}/dangling.json is a dangling symbolic link: ")


def test_a_manifest_this_user_cannot_read_is_to_be_made_readable():
    """Run as nobody (root reads everything): the fix for a 0600 manifest is its permissions."""
    import json
    import tempfile

    from vkdoctor.checks.drivers import DriverManifestContent

    top = Path(tempfile.mkdtemp(prefix="vkdoctor-unreadable-", dir="/tmp"))
    try:
        top.chmod(0o755)
        secret = top / "secret.json"
        secret.write_text('{"file_format_version": "1.0.0", "ICD": {}}')
        secret.chmod(0o600)
        # as root first: every module the check needs is imported before the child drops to
        # nobody (this interpreter's stdlib may live under /root)
        assert list(DriverManifestContent().run(ctx({"VK_DRIVER_FILES": str(secret)})))
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child drops to nobody and sends the findings back
            code = 1
            try:
                os.close(read)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                found = DriverManifestContent().run(ctx({"VK_DRIVER_FILES": str(secret)}))
                with os.fdopen(write, "w") as out:
                    json.dump([(f.title, f.fix()) for f in list(found)], out)
                code = 0
            except BaseException as exc:
                print("child:", repr(exc), file=sys.stderr)
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read) as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert json.loads(data) == [
            [
                f"{secret} is skipped by the loader",
                f"make {secret} readable for the users who run Vulkan programs "
                f"(sudo chmod a+r {secret}), or remove it",
            ]
        ]
    finally:
        shutil.rmtree(top)
