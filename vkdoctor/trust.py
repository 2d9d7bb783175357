"""Whether only root and the user can change what a path leads to: the one trust rule of the overlay.

A library the overlay links to, and the store the overlay lives in, are trusted only if nobody
else can swap them. The path is walked as the kernel resolves it, one component at a time, with
symbolic links followed: each link's own directory counts, and so does every directory its target
passes through. Every directory on the way, from `/` down, must be owned by root or the user and
be writable by nobody else: not by its group, not by others, not through a POSIX ACL entry.
Write permission without ownership is not enough: an owner turns the write bit back on at will.
The one exception is a sticky directory such as /tmp: others may write it, but only the owner of
an entry may rename or remove it, so passing through an entry that root or the user owns is safe.
The last component itself (the library, or the store directory) must be owned by root or the
user and writable by nobody else.
"""

from __future__ import annotations

import os
import posixpath
import stat
import struct

#: symbolic links followed in one path before giving up, as the kernel's MAXSYMLINKS
MAX_LINKS = 40

_ACL_XATTR = "system.posix_acl_access"
_ACL_USER, _ACL_GROUP_OBJ, _ACL_GROUP, _ACL_MASK, _ACL_OTHER = 0x02, 0x04, 0x08, 0x10, 0x20
_ACL_WRITE = 0x02


def user_name(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def group_name(gid: int) -> str:
    import grp

    try:
        return f"group {grp.getgrgid(gid).gr_name} (gid {gid})"
    except KeyError:
        return f"gid {gid}"


def _acl_writers(path: str, st: os.stat_result, me: int) -> list[str] | None:
    """Who other than root and `me` may write `path` by its access ACL; None when it has none
    (or it cannot be read: the mode's group bits then stand for the ACL's mask, a superset)."""
    try:
        raw = os.getxattr(path, _ACL_XATTR, follow_symlinks=False)
    except OSError:
        return None
    if len(raw) < 4 or (len(raw) - 4) % 8:
        return None
    entries = [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]
    mask = next((perm for tag, perm, _ in entries if tag == _ACL_MASK), 0o7)
    who: list[str] = []
    for tag, perm, ident in entries:
        # the mask limits named entries and the owning group, not the owner or others
        limited = perm & mask if tag in (_ACL_USER, _ACL_GROUP, _ACL_GROUP_OBJ) else perm
        if not limited & _ACL_WRITE:
            continue
        if tag == _ACL_USER and ident not in (0, me):
            who.append(f"{user_name(ident)} through an ACL entry")
        elif tag == _ACL_GROUP:
            who.append(f"{group_name(ident)} through an ACL entry")
        elif tag == _ACL_GROUP_OBJ:
            who.append(f"its {group_name(st.st_gid)}")
        elif tag == _ACL_OTHER:
            who.append("anyone")
    return who


def writers(path: str, st: os.stat_result, me: int) -> str | None:
    """Who other than root and `me` may write `path` (st: its lstat), in words, or None."""
    who = _acl_writers(path, st, me)
    if who is None:
        who = []
        if st.st_mode & stat.S_IWOTH:
            who.append("anyone")
        if st.st_mode & stat.S_IWGRP:
            who.append(f"its {group_name(st.st_gid)}")
    if not who:
        return None
    return "anyone" if "anyone" in who else " and ".join(who)


def _foreign(uid: int, me: int) -> bool:
    return uid not in (0, me)


def untrusted(
    path: str, *, uid: int | None = None, container: bool = False, searched: bool = False
) -> str | None:
    """Why someone other than root and the user (`uid`, else this process's effective uid) could
    change what `path` leads to, or None when nobody can. With `container`, `path` is a directory
    to create a new entry of the user's in: a sticky directory such as /tmp is then fine. A
    component that does not exist ends the walk once its directory is judged: nothing else is
    there to swap, and what is created there is judged when it is used. With `searched`, `path`
    is a folder ld.so looks in (an RPATH, RUNPATH or LD_LIBRARY_PATH entry): nothing judges
    what appears there before ld.so loads it, so a missing folder that another user can create,
    even in a sticky directory such as /tmp, is as bad as one they can write."""
    me = os.geteuid() if uid is None else uid
    if not path.startswith("/"):
        path = posixpath.join(os.getcwd(), path)
    todo = [p for p in path.split("/") if p]
    cur = "/"
    links = 0
    via: str | None = None
    try:
        st_cur = os.lstat(cur)
        while True:
            if not todo:  # the path is / itself (or led back to it)
                return _last(cur, st_cur, me, via, container)
            part = todo.pop(0)
            if part == ".":
                continue
            if part == "..":
                cur = posixpath.dirname(cur)
                st_cur = os.lstat(cur)
                continue
            entry = posixpath.join(cur, part)
            st: os.stat_result | None
            try:
                st = os.lstat(entry)
            except (FileNotFoundError, NotADirectoryError):
                st = None
            # judged even when the entry is missing: whoever may write `cur` may create it
            why = _passing(cur, st_cur, entry, st, me, "in" if not todo else "under")
            if why:
                return why + _through(via)
            if st is None:
                made = _creatable(cur, st_cur, entry, me) if searched else None
                return made + _through(via) if made else None
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS:
                    return f"{path} goes through more than {MAX_LINKS} symbolic links"
                target = os.readlink(entry)
                via = entry
                todo = [p for p in target.split("/") if p] + todo
                if target.startswith("/"):
                    cur = "/"
                    st_cur = os.lstat(cur)
                continue
            if not todo:
                return _last(entry, st, me, via, container)
            if not stat.S_ISDIR(st.st_mode):
                return None  # opening it fails with ENOTDIR: not a question of trust
            cur, st_cur = entry, st
    except OSError as exc:
        return f"{path} cannot be examined ({exc.strerror or exc})"


def foreign_link(path: str, *, uid: int | None = None) -> str | None:
    """Why a symbolic link on the way to `path`, a file vkdoctor is about to write, is one that
    someone other than root and the user (`uid`, else this process's effective uid) could have
    planted or can swap, or None. Writing through such a link (another user's link in /tmp, a
    link in a folder others can write) writes wherever that user chose: /etc/shadow, /dev/port.
    The kernel's fs.protected_symlinks refuses the same links, where it is on; vkdoctor follows
    links itself, so it judges them itself. Only links are judged: a folder of another user's
    named directly is the user's own choice."""
    me = os.geteuid() if uid is None else uid
    if not path.startswith("/"):
        path = posixpath.join(os.getcwd(), path)
    todo = [p for p in path.split("/") if p]
    cur = "/"
    links = 0
    try:
        st_cur = os.lstat(cur)
        while todo:
            part = todo.pop(0)
            if part in (".", ".."):
                cur = posixpath.dirname(cur) if part == ".." else cur
                st_cur = os.lstat(cur)
                continue
            entry = posixpath.join(cur, part)
            try:
                st = os.lstat(entry)
            except (FileNotFoundError, NotADirectoryError):
                return None  # created by the write: nothing on the way to judge
            if not stat.S_ISLNK(st.st_mode):
                cur, st_cur = entry, st
                continue
            why = _passing(cur, st_cur, entry, st, me, "in")
            if why:
                return f"{entry} is a symbolic link {why}"
            links += 1
            if links > MAX_LINKS:
                return f"{path} goes through more than {MAX_LINKS} symbolic links"
            target = os.readlink(entry)
            todo = [p for p in target.split("/") if p] + todo
            if target.startswith("/"):
                cur = "/"
                st_cur = os.lstat(cur)
    except OSError as exc:
        return f"{path} cannot be examined ({exc.strerror or exc})"
    return None


def _through(via: str | None) -> str:
    return f" (where the symbolic link {via} leads)" if via else ""


def _passing(
    cur: str, st_cur: os.stat_result, entry: str, st: os.stat_result | None, me: int, where: str
) -> str | None:
    """Why whoever controls directory `cur` could swap (or plant) its `entry`, or None. In a
    sticky directory a missing entry is safe: whoever creates it owns it, and it is judged then."""
    if _foreign(st_cur.st_uid, me):
        return f"{where} {cur}, a directory owned by {user_name(st_cur.st_uid)}"
    who = writers(cur, st_cur, me)
    if who is None:
        return None
    if not st_cur.st_mode & stat.S_ISVTX:
        return f"{where} {cur}, a directory {who} can write"
    if st is not None and _foreign(st.st_uid, me):
        return (
            f"{where} {cur}, a sticky directory where {entry} belongs to "
            f"{user_name(st.st_uid)}, who can replace it"
        )
    return None


def _creatable(cur: str, st_cur: os.stat_result, entry: str, me: int) -> str | None:
    """Why another user could create the missing `entry` of directory `cur`, or None."""
    who = writers(cur, st_cur, me)
    if who is None:
        return None
    return f"{entry} does not exist, and {who} can create it in {cur}"


def _last(path: str, st: os.stat_result, me: int, via: str | None, container: bool) -> str | None:
    if container:
        why = _passing(path, st, f"{path}/...", None, me, "in")
        return why + _through(via) if why else None
    if _foreign(st.st_uid, me):
        return f"owned by {user_name(st.st_uid)}, neither you nor root{_through(via)}"
    who = writers(path, st, me)
    if who:
        return f"writable by {who} (mode {stat.S_IMODE(st.st_mode):04o}){_through(via)}"
    return None


def trusted_search_path(value: str) -> str:
    """A PATH with only the folders whose programs nobody but root and the user can change:
    absolute, and trusted (a tool found in a folder another user can write is theirs to
    replace, and vkdoctor often runs as root)."""
    kept: list[str] = []
    for folder in value.split(":"):
        if folder.startswith("/") and folder not in kept and untrusted(folder) is None:
            kept.append(folder)
    return ":".join(kept)
