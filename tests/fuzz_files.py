"""Fuzz targets for the file readers: the loader's JSON (vkdoctor.loader.cjson), the ICD and layer
manifest readers as vkdoctor's loader emulation runs them, and the package databases (dpkg's
status and info files, a pacman local database entry, rpm's query output and database).

Seeds are real: the manifests installed in /usr/share/vulkan, slices of this machine's
/var/lib/dpkg/status and info files, and a pacman and an rpm database made by the real pacman and
rpm (tests/pkgtools.py). Each target writes its input where the reader looks and runs the reader
as `vkdoctor check` does. None of these readers may raise for bad input: they turn it into a
finding (`expected` is empty) except cjson, whose errors are its interface.
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from fuzzing import FuzzTarget

from vkdoctor.loader import cjson, icd, layers
from vkdoctor.loader.version import LoaderVersion, loader_version
from vkdoctor.model.context import Context, Options

MANIFEST_DIRS = ("/usr/share/vulkan", "/etc/vulkan")
DPKG = Path("/var/lib/dpkg")
#: the packages whose database entries seed the dpkg targets (what vkdoctor asks about)
DPKG_PACKAGES = ("mesa-vulkan-drivers", "libvulkan1", "libgl1-mesa-dri", "libllvm15", "libc6")
STATUS_SEED_BYTES = 96 * 1024
PACMAN_LIBRARY = b"\x7fELF not really a library\n"


def _options() -> Options:
    return Options(timeout=20.0)


@functools.cache
def _workdir() -> Path:
    work = Path(tempfile.mkdtemp(prefix="vkdoctor-fuzz-seeds-"))
    atexit.register(shutil.rmtree, work, True)
    return work


# --- the loader's JSON and the manifests ---------------------------------------------------


@functools.cache
def manifest_seeds() -> tuple[bytes, ...]:
    found = sorted(p for d in MANIFEST_DIRS for p in Path(d).glob("*/*.json") if p.is_file())
    seeds = tuple(p.read_bytes() for p in found)
    assert seeds, f"no Vulkan manifests in {MANIFEST_DIRS}"
    return seeds


@functools.cache
def hostile_manifest_seeds() -> tuple[bytes, ...]:
    """The real manifests, and lavapipe's with its fields nested 1500 deep (the loader's
    recursive parser takes that; Python's recursion limit is 1000) or 5000 values wide."""
    lvp = next((m for m in manifest_seeds() if b"libvulkan_lvp" in m), manifest_seeds()[0])
    deep_array = b"[" * 1500 + b'"1.0.0"' + b"]" * 1500
    deep_object = b'{"a": ' * 1500 + b'"1.0.0"' + b"}" * 1500
    wide = b"[" + b"1," * 5000 + b"1]"
    hostile = (
        lvp.replace(b'"1.0.0"', deep_array, 1),
        lvp.replace(b'"1.0.0"', deep_object, 1),
        re.sub(rb'"library_path": "[^"]*"', b'"library_path": ' + deep_object, lvp, count=1),
        re.sub(rb'"api_version": "[^"]*"', b'"api_version": ' + wide, lvp, count=1),
    )
    return (*manifest_seeds(), *hostile)


def run_cjson(data: bytes, scratch: str) -> object:
    root = cjson.parse(data, max_depth=icd.MAX_DEPTH)
    # what the manifest readers do with the values: look keys up, print, strip quotes
    for key in ("file_format_version", "ICD", "layer", "layers", "library_path", "api_version"):
        item = cjson.get(root, key)
        if item is not None:
            cjson.print_value(item)
            cjson.field_text(item)
            for child in item.children[:8]:
                if item.type == cjson.OBJECT:
                    cjson.get(item, (child.key or b"").decode("utf-8", "replace"))
                cjson.field_text(child)
    return root


@functools.cache
def _loader() -> LoaderVersion:
    return loader_version(Context(options=_options()))


def _loader_context(env: dict[str, str], cwd: Path) -> Context:
    """A context for the live host with `env`; the loader's version (the same for every input,
    and most of a scan's time: the ld.so emulation finding libvulkan.so.1) computed once."""
    ctx = Context(env=env, cwd=cwd, options=_options())
    ctx.set_fact(loader_version, _loader())
    return ctx


def _write(scratch: str, rel: str, data: bytes) -> Path:
    path = Path(scratch) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def run_icd(data: bytes, scratch: str) -> object:
    path = _write(scratch, "icd.d/fuzz.json", data)
    ctx = _loader_context({"VK_DRIVER_FILES": str(path)}, Path(scratch))
    scan = icd.driver_scan(ctx)
    for d in scan.drivers:
        icd.verdict(d, scan)
    return scan


def run_layers(data: bytes, scratch: str) -> object:
    """The same file as an implicit layer (found through XDG_DATA_DIRS, as in /usr/share) and
    as an explicit one (VK_LAYER_PATH)."""
    base = Path(scratch)
    _write(scratch, "share/vulkan/implicit_layer.d/fuzz.json", data)
    explicit = _write(scratch, "explicit/fuzz.json", data)
    env = {
        "XDG_DATA_DIRS": str(base / "share"),
        "XDG_CONFIG_DIRS": str(base / "none"),
        "HOME": str(base / "home"),
        "VK_LAYER_PATH": str(explicit.parent),
        "VK_INSTANCE_LAYERS": "VK_LAYER_MESA_overlay:VK_LAYER_fuzz",
    }
    ctx = _loader_context(env, base)
    return layers.implicit_layer_scan(ctx), layers.explicit_layer_scan(ctx)


# --- dpkg ----------------------------------------------------------------------------------


def _stanzas(text: str) -> list[str]:
    return [s for s in text.split("\n\n") if s.strip()]


@functools.cache
def dpkg_status_seeds() -> tuple[bytes, ...]:
    """Slices of this machine's status database: the stanzas vkdoctor asks about, then the
    first ones up to STATUS_SEED_BYTES (the whole file is ~700 KB)."""
    stanzas = _stanzas((DPKG / "status").read_text(encoding="utf-8", errors="surrogateescape"))
    wanted = [s for s in stanzas if re.match(rf"Package: ({'|'.join(DPKG_PACKAGES)})\n", s)]
    assert len(wanted) >= 3, "the dpkg status database lacks the Vulkan packages"
    head: list[str] = []
    for s in stanzas:
        if sum(map(len, head)) > STATUS_SEED_BYTES:
            break
        head.append(s)
    return tuple(
        ("\n\n".join(part) + "\n").encode("utf-8", "surrogateescape")
        for part in (wanted, head, wanted[:1])
    )


def run_dpkg_status(data: bytes, scratch: str) -> object:
    from vkdoctor.packages.dpkg import DpkgDB

    _write(scratch, "var/lib/dpkg/status", data)
    (Path(scratch) / "var/lib/dpkg/info").mkdir()
    db = DpkgDB(Context(root=Path(scratch), cwd=Path(scratch), options=_options()))
    pkgs = db.packages()
    for p in pkgs[:20]:
        db.by_name(p.name)
    return pkgs, db.leftovers()


@functools.cache
def dpkg_info_seeds() -> tuple[bytes, ...]:
    seeds = []
    for name in DPKG_PACKAGES:
        for suffix in (".list", ".md5sums"):
            for stem in (f"{name}:amd64", name):
                path = DPKG / "info" / f"{stem}{suffix}"
                if path.is_file():
                    seeds.append(path.read_bytes()[: 64 * 1024])
                    break
    assert len(seeds) >= 4, "the dpkg info files of the Vulkan packages are missing"
    return tuple(seeds)


@functools.cache
def _dpkg_paths() -> list[str]:
    """The paths vkdoctor asks about: real ones, from the unmutated .list files."""
    out = []
    for seed in dpkg_info_seeds():
        for line in seed.decode("utf-8", "surrogateescape").splitlines()[:20]:
            path = "/" + line.split("  ", 1)[-1].lstrip("/")
            if line.startswith("/") or "  " in line:
                out.append(path)
    return out


def run_dpkg_info(data: bytes, scratch: str) -> object:
    """A package's .list and .md5sums files: owners of its files and their recorded digests."""
    from vkdoctor.packages.digests import md5sums_entry
    from vkdoctor.packages.dpkg import DpkgDB, _search_lists

    text = data.decode("utf-8", "surrogateescape")
    paths = _dpkg_paths()
    root = Path(scratch)
    status = dpkg_status_seeds()[0]
    _write(scratch, "var/lib/dpkg/status", status)
    stem = re.search(rb"Package: (\S+)", status)
    name = stem.group(1).decode() if stem else "x"
    lst = _write(scratch, f"var/lib/dpkg/info/{name}:amd64.list", data)
    _write(scratch, f"var/lib/dpkg/info/{name}:amd64.md5sums", data)
    wanted = {p.encode("utf-8", "surrogateescape") for p in paths}
    found = _search_lists([(lst.name, str(lst))], wanted)
    db = DpkgDB(Context(root=root, cwd=root, options=_options()))
    pkg = next(iter(db.packages()), None)
    modified = [db.modified(pkg, p) for p in paths[:5]] if pkg is not None else []
    return found, md5sums_entry(text, paths), modified


# --- pacman --------------------------------------------------------------------------------


@functools.cache
def _pacman_entry() -> Path:
    """A local database entry made by the real pacman: `local/mesa-fuzz-23.1.0-1`."""
    from pkgtools import build_pkg, pacman_install, pacman_root

    work = _workdir() / "pacman"
    payload = work / "payload"
    payload.mkdir(parents=True)
    (payload / "libvulkan_fuzz.so").write_bytes(PACMAN_LIBRARY)
    (payload / "fuzz_icd.json").write_bytes(manifest_seeds()[0])
    pkg = build_pkg(
        work,
        "mesa-fuzz",
        "23.1.0-1",
        {
            "/usr/lib/libvulkan_fuzz.so": payload / "libvulkan_fuzz.so",
            "/usr/share/vulkan/icd.d/fuzz_icd.json": payload / "fuzz_icd.json",
            "/usr/lib/libvulkan_fuzz.so.1": "libvulkan_fuzz.so",
        },
        depends=("vulkan-icd-loader", "libdrm>=2.4.110", "llvm-libs=15.0.7"),
        provides=("vulkan-driver", "opengl-driver"),
    )
    root = pacman_root(work / "root")
    pacman_install(root, pkg)
    (entry,) = (root / "var/lib/pacman/local").glob("mesa-fuzz-*")
    return entry


@functools.cache
def pacman_seeds() -> tuple[bytes, ...]:
    entry = _pacman_entry()
    return tuple((entry / name).read_bytes() for name in ("desc", "files"))


@functools.cache
def pacman_mtree_seeds() -> tuple[bytes, ...]:
    # and one that inflates to 60 MiB: a reader must not hold it all to find one line
    deflate = zlib.compressobj(9, wbits=31)  # gzip, made a MiB at a time
    zeros = b"\0" * (1 << 20)
    bomb = deflate.compress(b"./usr/lib/x sha256digest=00\n")
    bomb += b"".join(deflate.compress(zeros) for _ in range(60)) + deflate.flush()
    return ((_pacman_entry() / "mtree").read_bytes(), bomb)


def _pacman_tree(scratch: str, files: dict[str, bytes]) -> Context:
    entry = _pacman_entry()
    root = Path(scratch)
    local = root / "var/lib/pacman/local" / entry.name
    local.mkdir(parents=True)
    for name in ("desc", "files", "mtree"):
        (local / name).write_bytes(files.get(name) or (entry / name).read_bytes())
    # the installed file, for the digest comparison with the mtree
    _write(scratch, "usr/lib/libvulkan_fuzz.so", PACMAN_LIBRARY)
    (root / "usr/lib/libvulkan_fuzz.so.1").symlink_to("libvulkan_fuzz.so")
    return Context(root=root, cwd=root, options=_options())


def _pacman_read(ctx: Context) -> object:
    from vkdoctor.packages.pacman import PacmanDB

    db = PacmanDB(ctx)
    pkgs = db.packages()
    owners = db.owners(["/usr/lib/libvulkan_fuzz.so.1", "/usr/share/vulkan/icd.d/fuzz_icd.json"])
    modified = [db.modified(p, "/usr/lib/libvulkan_fuzz.so") for p in pkgs]
    return pkgs, owners, modified


def run_pacman_desc(data: bytes, scratch: str) -> object:
    return _pacman_read(_pacman_tree(scratch, {"desc": data}))


def run_pacman_files(data: bytes, scratch: str) -> object:
    return _pacman_read(_pacman_tree(scratch, {"files": data}))


def run_pacman_mtree(data: bytes, scratch: str) -> object:
    return _pacman_read(_pacman_tree(scratch, {"mtree": data}))


# --- rpm -----------------------------------------------------------------------------------


@functools.cache
def _rpm_root() -> Path:
    """An rpm database made by the real rpm: two subpackages of one source, with provides."""
    from pkgtools import build_rpms, rpm_install

    work = _workdir() / "rpm"
    payload = work / "payload"
    payload.mkdir(parents=True)
    (payload / "icd.json").write_bytes(manifest_seeds()[0])
    (payload / "notes.txt").write_text("fuzz\n")
    rpms = build_rpms(
        work,
        "mesa-fuzz",
        "23.1.0",
        "1.fc39",
        {
            "mesa-fuzz-vulkan-drivers": {"/usr/share/vulkan/icd.d/fuzz.json": payload / "icd.json"},
            "mesa-fuzz-libs": {"/usr/share/doc/mesa-fuzz/notes.txt": payload / "notes.txt"},
        },
        vendor="Fedora Project",
        provides={"mesa-fuzz-libs": ("libfuzz.so.1()(64bit)", "mesa-fuzz-libs(x86-64) = 23.1.0")},
    )
    root = work / "root"
    rpm_install(root, *rpms.values())
    return root


@functools.cache
def rpm_qa_seeds() -> tuple[bytes, ...]:
    """What `rpm -qa --qf` (vkdoctor's query format) prints for that database."""
    from vkdoctor.packages.rpm import _QF

    out = subprocess.run(
        ["rpm", "--root", str(_rpm_root()), "--dbpath", "/var/lib/rpm", "-qa", "--qf", _QF],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    assert b"P\tmesa-fuzz-libs\t" in out, out
    return (out,)


def run_rpm_qa(data: bytes, scratch: str) -> object:
    from vkdoctor.packages.rpm import parse_dnf_check, parse_qa, parse_rpm_verify

    text = data.decode("utf-8", "surrogateescape")
    return parse_qa(text), parse_rpm_verify(text), parse_dnf_check(text)


@functools.cache
def rpm_db_seeds() -> tuple[bytes, ...]:
    dbfiles = sorted((_rpm_root() / "var/lib/rpm").glob("rpmdb.sqlite"))
    assert dbfiles, "rpm made no sqlite database"
    return (dbfiles[0].read_bytes(),)


def run_rpm_db(data: bytes, scratch: str) -> object:
    """The database file itself, read through the real rpm as vkdoctor reads it."""
    from vkdoctor.packages.rpm import RpmDB

    _write(scratch, "var/lib/rpm/rpmdb.sqlite", data)
    ctx = Context(root=Path(scratch), cwd=Path(scratch), options=_options())
    db = RpmDB(ctx, "/var/lib/rpm")
    return db.packages(), db.owners(["/usr/share/vulkan/icd.d/fuzz.json"])


def _all(*groups: Sequence[bytes]) -> tuple[bytes, ...]:
    return tuple(b for g in groups for b in g)


def _package_db_error() -> tuple[type[BaseException], ...]:
    from vkdoctor.packages.model import PackageDBError

    return (PackageDBError,)


TARGETS: list[FuzzTarget] = [
    FuzzTarget(
        "cjson",
        hostile_manifest_seeds,
        run_cjson,
        expected=(cjson.ParseError, cjson.TooDeep, cjson.TooMany, cjson.LoaderCrash),
    ),
    FuzzTarget("icd-manifest", lambda: (_loader(), hostile_manifest_seeds())[1], run_icd),
    FuzzTarget("layer-manifest", lambda: (_loader(), hostile_manifest_seeds())[1], run_layers),
    FuzzTarget("dpkg-status", dpkg_status_seeds, run_dpkg_status),
    FuzzTarget("dpkg-info", dpkg_info_seeds, run_dpkg_info),
    FuzzTarget("pacman-desc", lambda: pacman_seeds()[:1], run_pacman_desc),
    FuzzTarget("pacman-files", lambda: pacman_seeds()[1:], run_pacman_files),
    # inflating is bounded (64 MiB), not proportional to the compressed size
    FuzzTarget("pacman-mtree", pacman_mtree_seeds, run_pacman_mtree, seconds_floor=3.0),
    FuzzTarget("rpm-qa", rpm_qa_seeds, run_rpm_qa),
    # a real rpm per input: slow, so few examples in the suite; PackageDBError is how
    # RpmDB says that rpm could not read the database
    FuzzTarget(
        "rpm-db", rpm_db_seeds, run_rpm_db, expected=_package_db_error(), seconds_floor=20.0
    ),
]
