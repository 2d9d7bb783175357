"""Libraries out of a package file (.deb, .pkg.tar.zst/.xz, .rpm) into vkdoctor's private store.

Only the members whose file name is one of the wanted sonames are written, plus the files those
members link to inside the archive. Names are flattened to their base name and written by us (never
`tarfile.extract`), so an archive cannot write outside <cache>/extracted/<key>/. The format is
decided by the file's magic bytes, and a file whose name says another format is refused.

Decompression: .deb members with Python's tarfile (gzip, xz, bzip2) or the `zstd` CLI; .pkg.tar.zst
with the `zstd` CLI; .rpm with `bsdtar` (libarchive), which re-writes the payload as a tar stream.
Each child runs with a timeout and is killed with its process group when it runs over.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import shutil
import stat
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO

from vkdoctor import children, trust
from vkdoctor.model.record import field, record
from vkdoctor.overlay import store
from vkdoctor.overlay.errors import ArchiveError, StoreError, describe_os_error, store_hint

_MAGIC = {
    b"!<arch>\n": "deb",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\xfd7zXZ\x00": "xz",
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xed\xab\xee\xdb": "rpm",
}

#: what each file name promises, by suffix
_SUFFIXES = (
    (".pkg.tar.zst", "zstd"),
    (".pkg.tar.xz", "xz"),
    (".pkg.tar.gz", "gzip"),
    (".tar.zst", "zstd"),
    (".tar.xz", "xz"),
    (".tar.gz", "gzip"),
    (".deb", "deb"),
    (".rpm", "rpm"),
)


@record(frozen=True, kw_only=True)
class Extracted:
    """What came out of one package file."""

    package: Path
    #: <cache>/extracted/<key>, a directory to search like a --search-path
    directory: Path
    #: soname -> the file it names in `directory`
    found: dict[str, Path]
    #: wanted sonames the package does not contain
    absent: tuple[str, ...]
    #: wanted sonames the package holds only as a link to a path outside it: soname -> target
    linked_out: dict[str, str] = field(default_factory=dict)


def sniff(path: Path) -> str:
    """The container format by magic bytes: deb, rpm, zstd, xz, gzip, bzip2."""
    try:
        # a pipe (--from-package <(curl ...)) would block the open and can be read only once
        if not stat.S_ISREG(path.stat().st_mode):
            raise ArchiveError(
                f"{path} is not a regular file (a pipe or a device): save the package to a file "
                "and give that",
                path=str(path),
            )
        with path.open("rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise ArchiveError(
            f"cannot read package {path}: {describe_os_error(exc)}", path=str(path)
        ) from exc
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            return kind
    raise ArchiveError(
        f"{path} is not a package vkdoctor can read (it starts with {head[:8].decode('latin-1')!r}; "
        "expected a .deb, .rpm or a zstd/xz/gzip-compressed tar such as .pkg.tar.zst)",
        path=str(path),
    )


def package_format(package: Path) -> str:
    """The format of a package file (deb, rpm, zstd, xz, gzip), from its first bytes; an
    ArchiveError says why vkdoctor cannot read it (unreadable, another format than its name)."""
    kind = sniff(package)
    promised = expected_format(package)
    if promised is not None and promised != kind:
        raise ArchiveError(
            f"{package} is not the format its name says: the name says {promised}, "
            f"the content is {kind}",
            path=str(package),
        )
    if kind not in ("deb", "rpm") and promised is None:
        raise ArchiveError(
            f"{package}: vkdoctor reads .deb, .rpm and .pkg.tar.zst/.xz/.gz package files",
            path=str(package),
        )
    return kind


def expected_format(path: Path) -> str | None:
    name = path.name.lower()
    for suffix, kind in _SUFFIXES:
        if name.endswith(suffix):
            return kind
    return None


def _ar_members(f: IO[bytes], path: Path) -> Iterator[tuple[str, int, int]]:
    """(name, offset, size) of each member of a Unix ar archive (the .deb container)."""
    f.seek(8)
    while True:
        header = f.read(60)
        if not header:
            return
        if len(header) < 60 or header[58:60] != b"`\n":
            raise ArchiveError(
                f"{path} is a corrupt .deb: a broken ar member header at byte {f.tell() - len(header)}",
                path=str(path),
            )
        name = header[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(header[48:58].decode("ascii").strip())
        except ValueError as exc:
            raise ArchiveError(
                f"{path} is a corrupt .deb: member {name!r} has no valid size", path=str(path)
            ) from exc
        offset = f.tell()
        yield name, offset, size
        f.seek(offset + size + (size % 2))


class _Window(io.RawIOBase):
    """A read-only view of bytes [offset, offset+size) of an open file."""

    def __init__(self, f: IO[bytes], offset: int, size: int) -> None:
        self._f = f
        self._pos = offset
        self._end = offset + size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self._end - self._pos)
        if n <= 0:
            return 0
        self._f.seek(self._pos)
        data = self._f.read(n)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


class _Child:
    """A decompressor child whose stdout is a tar stream; killed on timeout or when we are done."""

    def __init__(self, argv: list[str], stdin: int | None, timeout: float, path: str) -> None:
        if shutil.which(argv[0], path=path) is None:
            raise ArchiveError(
                f"`{argv[0]}` is not installed; it is needed to read this package",
                hint="install zstd and libarchive-tools (bsdtar)",
            )
        self.argv = argv
        self.proc = children.start(
            argv,
            env={"LC_ALL": "C", "PATH": path},
            stdin=subprocess.DEVNULL if stdin is None else stdin,
        )
        self.timed_out = False
        self._timer = threading.Timer(timeout, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        self.timed_out = True
        children.kill_group(self.proc.pid)

    def finish(self, *, drain: bool) -> tuple[int, str]:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        if drain:
            with contextlib.suppress(OSError, ValueError):
                while self.proc.stdout.read(1 << 20):
                    pass
        self._timer.cancel()
        self.proc.stdout.close()
        err = self.proc.stderr.read().decode("utf-8", "replace")
        self.proc.stderr.close()
        rc = self.proc.wait()
        return rc, err.strip()


@contextlib.contextmanager
def _tar_stream(path: Path, kind: str, timeout: float, env_path: str) -> Iterator[tarfile.TarFile]:
    """The package's file tree as a streaming TarFile."""
    child: _Child | None = None
    raw: IO[bytes] | None = None
    try:
        if kind == "deb":
            raw = path.open("rb")
            data = [
                (name, off, size)
                for name, off, size in _ar_members(raw, path)
                if name.startswith("data.tar")
            ]
            if not data:
                raise ArchiveError(f"{path} is a corrupt .deb: it has no data.tar member")
            name, off, size = data[0]
            window = io.BufferedReader(_Window(raw, off, size), buffer_size=1 << 20)
            if name.endswith(".zst"):
                tmp_input: IO[bytes] = window
                child = _Child(["zstd", "-dcq"], subprocess.PIPE, timeout, env_path)
                feeder = threading.Thread(
                    target=_feed, args=(tmp_input, child.proc.stdin), daemon=True
                )
                feeder.start()
                assert child.proc.stdout is not None
                stream: IO[bytes] = child.proc.stdout
            else:
                stream = window
            mode = {
                ".xz": "r|xz",
                ".gz": "r|gz",
                ".bz2": "r|bz2",
                ".zst": "r|",
            }.get(posixpath.splitext(name)[1], "r|")
        elif kind == "rpm":
            child = _Child(
                ["bsdtar", "-c", "-f", "-", "--format", "pax", f"@{path}"], None, timeout, env_path
            )
            assert child.proc.stdout is not None
            stream, mode = child.proc.stdout, "r|"
        elif kind == "zstd":
            child = _Child(["zstd", "-dcq", "--", str(path)], None, timeout, env_path)
            assert child.proc.stdout is not None
            stream, mode = child.proc.stdout, "r|"
        else:
            raw = path.open("rb")
            stream, mode = raw, {"xz": "r|xz", "gzip": "r|gz", "bzip2": "r|bz2"}[kind]
        with tarfile.open(fileobj=stream, mode=mode) as tar:  # type: ignore[call-overload]
            yield tar
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        if child is not None and child.timed_out:
            raise ArchiveError(
                f"reading {path} took longer than {timeout:g} s; `{child.argv[0]}` was stopped",
                path=str(path),
            ) from exc
        detail = describe_os_error(exc) if isinstance(exc, OSError) else str(exc)
        if child is not None:
            rc, err = child.finish(drain=False)
            child = None
            if rc != 0 and err:
                detail = err.splitlines()[-1]
        raise ArchiveError(f"{path} is corrupt or truncated ({detail})", path=str(path)) from exc
    finally:
        if child is not None:
            rc, err = child.finish(drain=sys.exc_info()[0] is None)
            if rc != 0 and not child.timed_out and sys.exc_info()[0] is None:
                raise ArchiveError(
                    f"{path} is corrupt or truncated (`{child.argv[0]}`: {err or f'exit {rc}'})",
                    path=str(path),
                )
        if raw is not None:
            raw.close()


def _feed(src: IO[bytes], dst: IO[bytes] | None) -> None:
    assert dst is not None
    try:
        shutil.copyfileobj(src, dst, 1 << 20)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.close()


def _norm(name: str) -> str:
    return posixpath.normpath(name.lstrip("./").lstrip("/")) if name else name


def _link_target(member: tarfile.TarInfo) -> str:
    """The archive path a symlink/hardlink member points at."""
    if member.issym():
        base = posixpath.dirname(_norm(member.name))
        target = member.linkname
        joined = target.lstrip("/") if target.startswith("/") else posixpath.join(base, target)
        return _norm(joined)
    return _norm(member.linkname)


#: the largest library extracted from a package: the biggest shipped ones (an LLVM, a CUDA
#: library) are a few hundred MB; a package's few MB can unpack to terabytes of zeros
MAX_LIBRARY = 2 << 30
#: free space left on the store's filesystem after a library is written
_SPARE = 1 << 30


def _copy_member(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> None:
    """Copy one member into the store, bounded: more than MAX_LIBRARY, or more than the disk
    can spare, is refused before a byte is written; what is not an ELF file keeps only its
    first bytes (enough for the refusal to say why)."""
    _fits(member, dest.parent)
    src = tar.extractfile(member)
    if src is None:
        raise ArchiveError(f"cannot read {member.name} from the package")
    try:
        out = dest.open("wb")
    except OSError as exc:
        raise StoreError(f"cannot write {dest}: {describe_os_error(exc)}", path=str(dest)) from exc
    with src, out:
        first = True
        for block in iter(lambda: src.read(1 << 20), b""):
            try:
                out.write(block)
            except OSError as exc:
                raise StoreError(
                    f"cannot write {dest}: {describe_os_error(exc)}",
                    hint=store_hint(exc),
                    path=str(dest),
                ) from exc
            if first and not block.startswith(b"\x7fELF"):
                break
            first = False
    dest.chmod(0o500)


def _fits(member: tarfile.TarInfo, store_dir: Path) -> None:
    if member.size > MAX_LIBRARY:
        raise ArchiveError(
            f"{member.name} in the package is {member.size:,} bytes, more than any library "
            f"({MAX_LIBRARY >> 30} GiB): not extracted"
        )
    try:
        st = os.statvfs(store_dir)
    except OSError:
        return  # the write says why
    free = st.f_bavail * st.f_frsize
    if member.size > free - _SPARE:
        raise StoreError(
            f"{member.name} in the package is {member.size:,} bytes, and {store_dir} has "
            f"{max(free, 0) >> 20:,} MiB free: not extracted (at least 1 GiB is left free)",
            path=str(store_dir),
        )


def _pass(
    path: Path,
    kind: str,
    timeout: float,
    env_path: str,
    want: Callable[[tarfile.TarInfo], bool],
    into: Path,
    links: dict[str, str],
    written: dict[str, str],
) -> None:
    """One pass over the archive: copy regular members `want` accepts, note the link ones."""
    with _tar_stream(path, kind, timeout, env_path) as tar:
        for member in tar:
            if not want(member):
                continue
            name = _norm(member.name)
            if member.issym() or member.islnk():
                links[name] = _link_target(member)
            elif member.isfile():
                base = posixpath.basename(name)
                if base in written.values():
                    continue
                _copy_member(tar, member, into / base)
                written[name] = base


def _refuse_untrusted(package: Path) -> None:
    """What is unpacked from a package is loaded into the user's programs: the trust rule of
    --search-path holds for a package file too (and for every folder on its way)."""
    why = trust.untrusted(str(package))
    if why:
        raise ArchiveError(
            f"{package} is not used: {why}, so what vkdoctor would unpack from it is not "
            "yours to load",
            path=str(package),
        )


def _sha256(package: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    try:
        with package.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ArchiveError(
            f"cannot read package {package}: {describe_os_error(exc)}", path=str(package)
        ) from exc
    return digest.hexdigest()


def extract_libraries(
    package: Path,
    sonames: Collection[str],
    cache_dir: Path,
    *,
    env_path: str | None,
    timeout: float = 120.0,
) -> Extracted:
    """Copy the members named like `sonames` (and what they link to) into the private store.
    `env_path`: the PATH the decompressors (zstd, bsdtar, rpm) are found and run with."""
    # a decompressor found in a folder another user can write would run as whoever runs this
    env_path = trust.trusted_search_path("/usr/bin:/bin" if env_path is None else env_path)
    _refuse_untrusted(package)
    kind = package_format(package)
    if kind == "rpm":
        _verify_rpm(package, timeout, env_path)
    key = store.content_key([_sha256(package), *sorted(sonames)])
    wanted = set(sonames)
    result: dict[str, str] = {}
    outside: dict[str, str] = {}

    def fill(tmp: Path) -> None:
        links: dict[str, str] = {}
        written: dict[str, str] = {}
        _pass(
            package,
            kind,
            timeout,
            env_path,
            lambda m: posixpath.basename(_norm(m.name)) in wanted,
            tmp,
            links,
            written,
        )
        # Follow in-archive links (soname -> real file) with bounded extra passes.
        for _ in range(4):
            pending = {_resolve(t, links) for t in links.values()} - set(written)
            pending = {p for p in pending if p not in links}
            if not pending:
                break
            _pass(
                package,
                kind,
                timeout,
                env_path,
                lambda m, p=frozenset(pending): _norm(m.name) in p,  # type: ignore[misc]
                tmp,
                links,
                written,
            )
        for name, target in links.items():
            soname = posixpath.basename(name)
            if soname not in wanted:
                continue
            real = _resolve(target, links)
            if real in written and not (tmp / soname).exists():
                (tmp / soname).symlink_to(written[real])
                result[soname] = soname
            elif real not in written:
                outside[soname] = "/" + real
        for base in written.values():
            if base in wanted:
                result[base] = base
                outside.pop(base, None)
        if outside:
            (tmp / ".outside").write_text("".join(f"{s} {t}\n" for s, t in sorted(outside.items())))
        (tmp / ".complete").write_text("\n".join(sorted(result)) + "\n")

    def complete(d: Path) -> bool:
        marker = d / ".complete"
        if not marker.is_file():
            return False
        for name in marker.read_text().split():
            result[name] = name
        with contextlib.suppress(OSError):
            for line in (d / ".outside").read_text().splitlines():
                soname, _, target = line.partition(" ")
                outside[soname] = target
        return True

    directory = store.build_atomically(
        store.ensure_private_dir(cache_dir) / "extracted", key, fill, is_complete=complete
    )
    found = {s: directory / s for s in sorted(result)}
    return Extracted(
        package=package,
        directory=directory,
        found=found,
        absent=tuple(sorted(wanted - set(found))),
        linked_out={s: t for s, t in outside.items() if s not in found},
    )


def _verify_rpm(package: Path, timeout: float, env_path: str) -> None:
    """libarchive reads a truncated .rpm as an empty one; rpm's own digest check does not."""
    if shutil.which("rpm", path=env_path) is None:
        return
    try:
        proc = subprocess.run(
            ["rpm", "-K", "--nosignature", "--", str(package)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"LC_ALL": "C", "PATH": env_path},
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ArchiveError(f"checking {package} took longer than {timeout:g} s") from exc
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise ArchiveError(
            f"{package} is corrupt or truncated (rpm -K: {detail[-1] if detail else 'failed'})",
            path=str(package),
        )


def _resolve(name: str, links: dict[str, str]) -> str:
    seen = set()
    while name in links and name not in seen:
        seen.add(name)
        name = links[name]
    return name
