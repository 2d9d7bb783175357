"""Which of dpkg's info/*.list files hold which of some lines: `grep -Fx` over all of them.

One grep reads the ~800 list files (7.5 MB on a desktop) in about a third of the time Python
takes to read and split them, and it runs on another core while vkdoctor does other work: the
search is started by a check's prefetch and read when the check runs. Where grep is missing,
fails, or cannot be given the question exactly (a line or a file name with a newline), the
answer is None and the caller reads the files itself.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence, Set

from vkdoctor import children
from vkdoctor.packages.proc import DEFAULT_PATH, which


class ListSearch:
    """`grep -a -F -x -Z -f - -- FILE...` for the lines `wanted`, started now."""

    def __init__(
        self,
        lists: Sequence[tuple[str, str]],
        wanted: Set[bytes],
        *,
        env: Mapping[str, str],
        timeout: float,
    ) -> None:
        #: (file name, path) of each list file, sorted by name
        self.lists = tuple(lists)
        self.wanted = frozenset(wanted)
        self.timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        exe = which("grep", env)
        if (
            exe is None
            or not self.lists
            or not self.wanted
            or any(not w or b"\n" in w for w in self.wanted)
            or any("\n" in path for _, path in self.lists)
        ):
            return
        child_env = {"LC_ALL": "C", "LANG": "C", "PATH": env.get("PATH") or DEFAULT_PATH}
        try:
            proc = children.start(
                # -D skip: a FIFO among the lists (a --root tree) would block grep
                [exe, "-a", "-D", "skip", "-F", "-x", "-Z", "-f", "-", "--"]
                + [p for _, p in self.lists],
                env=child_env,
                stdin=subprocess.PIPE,
                own_session=False,
            )
        except OSError:
            return
        assert proc.stdin is not None
        try:
            # grep reads every pattern before it reads a file: no deadlock on a full pipe
            proc.stdin.write(b"\n".join(sorted(self.wanted)) + b"\n")
            proc.stdin.close()
        except OSError:  # it died at once (an option it does not know)
            children.kill_and_reap(proc)
            return
        proc.stdin = None  # sent and closed: communicate() must not flush it
        self._proc = proc

    def result(self) -> dict[bytes, str] | None:
        """Each wanted line found -> the name of the first list file (in name order) holding
        it; None when grep could not answer."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            children.kill_and_reap(proc)
            return None
        if proc.returncode not in (0, 1):  # 2: a file it could not read, or grep's own error
            return None
        names = {os.fsencode(path): name for name, path in self.lists}
        found: dict[bytes, str] = {}
        for record in out.split(b"\n"):
            if not record:
                continue
            path, sep, line = record.partition(b"\0")
            name = names.get(path)
            if not sep or name is None or line not in self.wanted:
                return None  # not the output asked for
            if line not in found or name < found[line]:
                found[line] = name
        return found

    def cancel(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            children.kill_and_reap(proc)
