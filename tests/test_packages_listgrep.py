"""dpkg ownership through one grep over info/*.list: the same answers as reading the files here,
on this machine's real dpkg database and on small lists made to test the edges."""

from __future__ import annotations

import random
from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.packages.dpkg import DpkgDB, _search_lists
from vkdoctor.packages.listgrep import ListSearch

ENV = {"PATH": "/usr/bin:/bin"}


def lists_in(info: Path) -> list[tuple[str, str]]:
    return sorted((p.name, str(p)) for p in info.iterdir() if p.name.endswith(".list"))


def test_grep_answers_as_python_reads_on_the_real_database():
    lists = lists_in(Path("/var/lib/dpkg/info"))
    assert len(lists) > 100
    rng = random.Random(7)
    wanted: set[bytes] = set()
    for _, path in rng.sample(lists, 40):
        lines = [x for x in Path(path).read_bytes().split(b"\n") if x]
        wanted.update(rng.sample(lines, min(8, len(lines))))
    # directories are listed by many packages: the first list in name order must win
    wanted |= {b"/usr/lib/x86_64-linux-gnu", b"/usr/share/doc", b"/nonexistent/libnothing.so.1"}
    found = ListSearch(lists, wanted, env=ENV, timeout=30).result()
    assert found is not None
    assert found == _search_lists(lists, wanted)
    assert b"/nonexistent/libnothing.so.1" not in found
    assert found[b"/usr/share/doc"] == next(
        name for name, path in lists if b"\n/usr/share/doc\n" in b"\n" + Path(path).read_bytes()
    )


def test_first_list_in_name_order_colons_and_the_python_fallback(tmp_path: Path):
    info = tmp_path / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (info / "zlib1g:amd64.list").write_bytes(b"/usr\n/usr/lib/libz.so.1\n/usr/lib/libshared.so\n")
    (info / "libshared:amd64.list").write_bytes(b"/usr/lib/libshared.so\n/usr/lib/odd name.so")
    (info / "notes.txt").write_bytes(b"/usr/lib/libz.so.1\n")
    lists = lists_in(info)
    wanted = {b"/usr/lib/libz.so.1", b"/usr/lib/libshared.so", b"/usr/lib/odd name.so", b"/usr"}
    expected = {
        b"/usr/lib/libz.so.1": "zlib1g:amd64.list",
        b"/usr/lib/libshared.so": "libshared:amd64.list",
        b"/usr/lib/odd name.so": "libshared:amd64.list",
        b"/usr": "zlib1g:amd64.list",
    }
    assert ListSearch(lists, wanted, env=ENV, timeout=30).result() == expected
    assert _search_lists(lists, wanted) == expected
    # no grep on PATH, a line grep cannot be asked for: no answer, the caller reads the files
    assert ListSearch(lists, wanted, env={"PATH": str(tmp_path)}, timeout=30).result() is None
    assert ListSearch(lists, {b"/a\n/usr"}, env=ENV, timeout=30).result() is None
    # a list grep cannot read (here a directory): grep fails, Python skips that one file
    (info / "broken.list").mkdir()
    lists = lists_in(info)
    assert ListSearch(lists, wanted, env=ENV, timeout=30).result() is None
    assert _search_lists(lists, wanted) == expected
    # a list of megabytes (a cloud SDK's, texlive's) is read whole by both
    big = b"".join(b"/usr/share/big/file%07d\n" % i for i in range(120_000))
    (info / "big.list").write_bytes(big + b"/usr/share/big/last\n")
    assert len(big) > 2 << 20
    lists = [item for item in lists_in(info) if item[0] != "broken.list"]
    last = {b"/usr/share/big/last": "big.list"}
    assert ListSearch(lists, set(last), env=ENV, timeout=30).result() == last
    assert _search_lists(lists, set(last)) == last


def test_prefetched_owners_equal_the_ones_asked_directly(tmp_path: Path):
    root = tmp_path / "root"
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(
        "Package: libz\nStatus: install ok installed\nVersion: 1.2\nArchitecture: amd64\n\n"
        "Package: mesa\nStatus: install ok installed\nVersion: 23.0\nArchitecture: amd64\n"
    )
    (info / "libz.list").write_text("/usr/lib/libz.so.1\n")
    (info / "mesa.list").write_text("/usr/lib/libvulkan_lvp.so\n/usr/share/vulkan/icd.d/lvp.json\n")
    paths = ["/usr/lib/libz.so.1", "/usr/lib/libvulkan_lvp.so", "/usr/lib/libnothing.so"]

    def names(db: DpkgDB) -> dict[str, str]:
        return {k: v[0].name for k, v in db.owners(paths).items()}

    prefetched = DpkgDB(Context(root=root, env=ENV))
    prefetched.prefetch_owners(paths)
    assert prefetched._search is not None and prefetched._search._proc is not None
    direct = DpkgDB(Context(root=root, env={"PATH": str(tmp_path)}))  # no grep: read here
    expected = {"/usr/lib/libz.so.1": "libz", "/usr/lib/libvulkan_lvp.so": "mesa"}
    assert names(prefetched) == names(direct) == expected
    assert prefetched._search is None
    # a later question about another path is answered too
    assert {
        k: v[0].name for k, v in prefetched.owners(["/usr/share/vulkan/icd.d/lvp.json"]).items()
    } == {"/usr/share/vulkan/icd.d/lvp.json": "mesa"}
