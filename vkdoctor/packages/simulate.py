"""A package fix is checked by apt's own simulation (`apt-get -s`) before it is printed.

On the live machine apt-get -s reads the machine's database and lists; for a `--root` tree the
host's apt-get reads the tree's data (its dpkg status and architectures, sources, preferences and
lists) through a configuration vkdoctor writes (vkdoctor.packages.aptroot): never the tree's
apt.conf, never a tool from inside the tree. An `apt-mark unhold` step is simulated on a copy of
the status file with the hold released; `apt update` cannot be simulated (the lists are used as
last refreshed).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from vkdoctor.model import tree as tree_files
from vkdoctor.model.context import Context
from vkdoctor.model.files import LARGE
from vkdoctor.model.record import field, record, replace
from vkdoctor.packages.aptroot import apt_env, architectures, unsafe_source
from vkdoctor.packages.proc import ToolRun, run_tool, which

#: the Vulkan loader's package: a fix that removes it leaves nothing to load a driver
LOADER_PACKAGES = ("libvulkan1",)

_INST = re.compile(r"^Inst (\S+) (?:\[(\S+)\] )?\((\S+) ([^)]*)\)")
_REMV = re.compile(r"^Remv (\S+)(?: \[(\S+)\])?")
_ACTIONS = {"install", "reinstall", "full-upgrade", "dist-upgrade", "upgrade", "remove"}
APT = "apt-get -s"


@record(frozen=True, kw_only=True)
class Simulation:
    """What apt-get -s said of one printed fix."""

    fix: str
    #: the apt-get -s command lines that ran (none when the fix holds nothing apt can simulate)
    commands: tuple[str, ...] = ()
    ran: bool = False
    ok: bool = False
    installs: tuple[str, ...] = ()
    removes: tuple[str, ...] = ()
    #: why the fix is rejected, or why it could not be simulated
    why: str = ""
    skipped: tuple[str, ...] = field(default_factory=tuple)
    #: the --root tree whose /etc/apt, lists and status apt read (None: the live machine)
    tree: str | None = None
    #: the simulation: "apt-get -s", or "pacman" (its transaction check, stopped at its prompt)
    tool: str = APT

    def as_evidence(self) -> dict[str, object]:
        return {
            "fix": self.fix,
            "commands": list(self.commands),
            "ran": self.ran,
            "ok": self.ok,
            "installs": list(self.installs),
            "removes": list(self.removes),
            "why": self.why,
            "not_simulated": list(self.skipped),
            "tree": self.tree,
            "tool": self.tool,
        }

    def summary(self) -> str:
        """One sentence for the finding's message."""
        if not self.ran:
            return f"The fix is unverified: {self.why}."
        if not self.ok:
            return f"{self.label} rejects `{self.fix}`: it {self.why}."
        what = []
        if self.installs:
            shown = ", ".join(self.installs[:4]) + (" ..." if len(self.installs) > 4 else "")
            what.append(f"installs {shown}")
        removes = f"removes {', '.join(self.removes[:4])}" if self.removes else "removes nothing"
        what.append(removes)
        where = "" if not self.skipped else f" ({'; '.join(self.skipped)} not simulated)"
        return f"Checked with {self.label}: it {' and '.join(what)}{where}."

    @property
    def label(self) -> str:
        """How a message names the simulation."""
        if self.tool == "pacman":
            return "pacman's own transaction check (stopped at its prompt)"
        return self.tool


def tree_of(ctx: Context) -> str | None:
    """The `tree` a simulation names: the --root tree, or None for the live machine."""
    return None if ctx.live else str(ctx.root)


def unsimulated(fix: str, why: str, *, tool: str = APT, tree: str | None = None) -> Simulation:
    """A fix the tool never ran on, and why (no tool, no lists, a step it cannot simulate)."""
    return Simulation(fix=fix, tool=tool, tree=tree, why=why)


def simulated(
    fix: str,
    *,
    tool: str,
    tree: str | None,
    commands: Sequence[str],
    skipped: Sequence[str],
    refused: str | None = None,
    installs: Sequence[str] = (),
    removes: Sequence[str] = (),
    lost: Sequence[str] = (),
) -> Simulation:
    """A fix the tool ran on: `refused` says why a step failed; otherwise its transaction, which
    fails only for `lost`, the protected packages it would remove."""
    ran = Simulation(
        fix=fix, tool=tool, tree=tree, commands=tuple(commands), ran=True, skipped=tuple(skipped)
    )
    if refused is not None:
        return replace(ran, why=refused)
    return replace(
        ran,
        ok=not lost,
        installs=tuple(installs),
        removes=tuple(removes),
        why=f"would remove {', '.join(lost)}" if lost else "",
    )


def _steps(fix: str) -> list[list[str]]:
    out = []
    for part in fix.split("&&"):
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        while words and words[0] in ("sudo", "chroot"):
            words = words[2:] if words[0] == "chroot" else words[1:]
        if words:
            out.append(words)
    return out


def _released(status: str, names: Sequence[str]) -> str:
    """The status file with each named package's hold let go (apt-mark unhold)."""
    chunks = status.split("\n\n")
    for i, chunk in enumerate(chunks):
        m = re.search(r"^Package: (\S+)$", chunk, re.M)
        if m and m.group(1) in names:
            chunks[i] = re.sub(r"^Status: hold ", "Status: install ", chunk, flags=re.M)
    return "\n\n".join(chunks)


def _apt_argv(status: str | None) -> list[str]:
    argv = ["apt-get", "-s", "-q", "-o", "Debug::NoLocking=1"]
    if status is not None:
        argv += ["-o", f"Dir::State::status={status}"]
    return argv


def _parse(run: ToolRun) -> tuple[list[str], list[str]]:
    installs, removes = [], []
    for line in run.stdout.splitlines():
        if m := _INST.match(line):
            installs.append(f"{m.group(1)} {m.group(3)}")
        elif m := _REMV.match(line):
            removes.append(m.group(1))
    return installs, removes


def _error(run: ToolRun) -> str:
    if run.problem:
        return f"fails ({run.problem})"
    lines = [ln[3:] for ln in run.stderr.splitlines() if ln.startswith("E: ")]
    unmet = [
        " ".join(ln.split())
        for ln in run.stdout.splitlines()
        if ln.startswith(" ") and ("Depends:" in ln or "but" in ln)
    ]
    text = "; ".join(unmet[:2] + lines[:1]) or (run.stderr.strip() or run.stdout.strip())[-300:]
    return f"fails (exit {run.returncode}" + (f": {text})" if text else ")")


def _lists(ctx: Context) -> list[str]:
    try:
        return tree_files.names(ctx, "/var/lib/apt/lists")
    except OSError:
        return []


def simulate(ctx: Context, fix: str, protect: Sequence[str]) -> Simulation:
    """apt-get -s of every apt step of `fix`; a step that removes a package of `protect` (the
    driver's, the loader's) or that apt refuses rejects the fix."""
    import tempfile

    tree = tree_of(ctx)
    if not which("apt-get", ctx.env):
        return unsimulated(fix, "apt-get is not installed on this machine", tree=tree)
    if not any("_Packages" in n for n in _lists(ctx)):
        return unsimulated(
            fix, "there are no package lists to simulate with (apt update never ran)", tree=tree
        )
    if not ctx.live and not architectures(ctx.root)[0]:
        why = "the tree's dpkg database names no architecture"
        return unsimulated(fix, why, tree=tree)
    if not ctx.live and (unsafe := unsafe_source(ctx.root)):
        return unsimulated(fix, f"the tree's sources are not used: {unsafe}", tree=tree)
    steps = _steps(fix)
    skipped: list[str] = []
    released: list[str] = []
    actions: list[list[str]] = []
    for words in steps:
        tool = words[0]
        if tool in ("apt", "apt-get") and "update" in words[1:2]:
            skipped.append("apt update (the lists as last refreshed)")
        elif tool == "dpkg" and "--configure" in words:
            skipped.append(
                "dpkg --configure -a (configures what is unpacked; apt cannot simulate it)"
            )
        elif tool == "apt-mark" and words[1:2] == ["unhold"]:
            released += words[2:]
        elif tool == "apt-mark":
            continue
        elif tool in ("apt", "apt-get") and (
            _ACTIONS.intersection(words[1:]) or "--fix-broken" in words or "-f" in words
        ):
            actions.append(words[1:])
        else:
            why = f"apt-get -s cannot simulate `{' '.join(words)}`"
            return unsimulated(fix, why, tree=tree)
    if not actions:
        return unsimulated(fix, "it holds no apt step to simulate", tree=tree)
    status_copy: str | None = None
    tmp: str | None = None
    try:
        if released:
            text = tree_files.read_text(ctx, "/var/lib/dpkg/status", LARGE)
            fd, tmp = tempfile.mkstemp(prefix="vkdoctor-status-")
            with os.fdopen(fd, "w") as f:
                f.write(_released(text, released))
            status_copy = tmp
        commands: list[str] = []
        installs: list[str] = []
        removes: list[str] = []
        timeout = min(ctx.options.timeout, 60.0)
        for args in actions:
            run = run_tool([*_apt_argv(status_copy), *args], env=apt_env(ctx), timeout=timeout)
            commands.append(run.command)
            if run.returncode != 0:
                return simulated(
                    fix,
                    tool=APT,
                    tree=tree,
                    commands=commands,
                    skipped=skipped,
                    refused=_error(run),
                )
            ins, rem = _parse(run)
            installs += ins
            removes += rem
        return simulated(
            fix,
            tool=APT,
            tree=tree,
            commands=commands,
            skipped=skipped,
            installs=installs,
            removes=removes,
            lost=[p for p in removes if p.partition(":")[0] in protect],
        )
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


#: (root, fix, protected packages) -> its simulation, for this run: lavapipe and RADV missing
#: the same library share one fix
_MEMO: dict[tuple[str, str, tuple[str, ...]], Simulation] = {}


def first_that_works(
    ctx: Context,
    candidates: Iterable[str],
    protect: Sequence[str],
    run: Callable[[Context, str, Sequence[str]], Simulation] = simulate,
) -> tuple[Simulation | None, list[Simulation]]:
    """The first candidate the simulation `run` (apt-get -s unless told) accepts, and every
    simulation tried on the way. `candidates` is consumed lazily: later ones are worked out only
    when an earlier one fails."""
    tried: list[Simulation] = []
    seen: set[str] = set()
    for fix in candidates:
        if fix in seen:
            continue
        seen.add(fix)
        key = (str(ctx.root), f"{run.__module__}:{fix}", tuple(protect))
        if key not in _MEMO:
            _MEMO[key] = run(ctx, fix, protect)
        sim = _MEMO[key]
        tried.append(sim)
        if sim.ok:
            return sim, tried
    return None, tried
