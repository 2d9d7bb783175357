"""A pacman fix is checked by pacman itself before it is printed.

The host's pacman is pointed at the tree (`--root ROOT`, and a private dbpath whose `local` and
`sync` are the tree's own), with a config of the tree's repositories that have a sync database,
its IgnorePkg/IgnoreGroup, and no server. pacman resolves the transaction (dependencies,
conflicts, replacements) and stops at its own "Proceed with installation?", which is answered
no (stdin is empty); with no server and an empty cache it could fetch nothing anyway. `-p`
alone is not enough: pacman's print mode skips the conflict check, so a fix that removes the
driver would pass. `-y` (refresh the sync databases) is not simulated: the databases are used
as last refreshed. Nothing is written in the tree: pacman's lock and log go to the private
directory.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.model.record import field, record
from vkdoctor.packages.pacman import PacmanDB, ignored
from vkdoctor.packages.proc import ToolRun, run_tool, which
from vkdoctor.packages.simulate import Simulation, simulated, tree_of, unsimulated

#: the Vulkan loader's packages on Arch
LOADER_PACKAGES = ("vulkan-icd-loader", "lib32-vulkan-icd-loader")
TOOL = "pacman"

_REPLACE = re.compile(r":: Replace (\S+) with (\S+)\? \[Y/n\]")
_PROCEED = ":: Proceed with installation?"
_NOTHING = "there is nothing to do"
_RELEASE = re.compile(r"IgnorePkg/IgnoreGroup entry that matches (\S+) so that it no longer")
#: a pacman command inside a fix given in words ("rebuild it ..., or sudo pacman -S X")
EMBEDDED = re.compile(r"((?:sudo )?pacman -S\w*(?: (?:--?[\w-]+|[\w.+@:=<>-]+))*)")


def _split(version: str) -> tuple[str, str]:
    """`zx3-5.0-1` -> (`zx3`, `5.0-1`)."""
    parts = version.rsplit("-", 2)
    return (parts[0], "-".join(parts[1:])) if len(parts) == 3 else (version, "")


def parse_targets(text: str) -> tuple[list[str], list[str]]:
    """The `Packages (N) ...` list of pacman's transaction summary: (installs, removes) as
    `name version`; a removal is marked `[removal]`."""
    m = re.search(r"^Packages \(\d+\)(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    if not m:
        return [], []
    words = m.group(1).split()
    installs: list[str] = []
    removes: list[str] = []
    for i, word in enumerate(words):
        if word == "[removal]":
            continue
        name, version = _split(word)
        removal = i + 1 < len(words) and words[i + 1] == "[removal]"
        (removes if removal else installs).append(name if removal else f"{name} {version}")
    return installs, removes


def _steps(fix: str) -> list[list[str]] | None:
    """The pacman commands of `fix` (sudo dropped); None when it holds something else."""
    out: list[list[str]] = []
    for part in re.split(r"&&|, then |; then ", fix):
        try:
            words = shlex.split(part)
        except ValueError:
            return None
        while words and words[0] == "sudo":
            words = words[1:]
        if not words:
            continue
        if words[0] != "pacman":
            return None
        out.append(words)
    return out or None


def _sync_args(words: list[str]) -> tuple[list[str], bool] | None:
    """`pacman -Syu X` -> (`-Su X`, True: it refreshed); None for anything but a -S."""
    args: list[str] = []
    refresh = False
    sync = False
    for word in words[1:]:
        if word.startswith("-") and not word.startswith("--") and "S" in word:
            sync = True
            refresh = refresh or "y" in word
            flags = word[1:].replace("y", "")
            args.append(f"-{flags}")
        elif word in ("--sync",):
            sync = True
            args.append("-S")
        elif word in ("--refresh", "--noconfirm"):
            refresh = refresh or word == "--refresh"
        else:
            args.append(word)
    return (args, refresh) if sync else None


def _config(db: PacmanDB, ctx: Context, released: Sequence[str]) -> str:
    pkgs, groups = ignored(ctx)
    lines = ["[options]"]
    kept = [p for p, _ in pkgs if p not in released]
    if kept:
        lines.append(f"IgnorePkg = {' '.join(kept)}")
    if groups:
        lines.append(f"IgnoreGroup = {' '.join(g for g, _ in groups)}")
    lines += [f"[{r}]" for r in db.sync_repos()]
    return "\n".join(lines) + "\n"


def _shown(ctx: Context, db: PacmanDB, args: Sequence[str]) -> str:
    """The command as a reader would type it (the private dbpath holds the tree's databases)."""
    where = "" if ctx.live else f"--root {ctx.root} --dbpath {ctx.under(db.db_path)} "
    return f"pacman {where}{' '.join(args)} (answered no at its prompt)"


def _error(run: ToolRun) -> str:
    if run.problem:
        return f"fails ({run.problem})"
    text = run.stdout + "\n" + run.stderr
    conflicts = re.findall(r"^:: (\S+) and (\S+) are in conflict", text, re.M)
    if conflicts:
        a, b = conflicts[0]
        return f"fails: {a} and {b} are in conflict (pacman would have to remove {b})"
    errors = [ln[len("error: ") :] for ln in text.splitlines() if ln.startswith("error: ")]
    shown = "; ".join(dict.fromkeys(errors[:3])) or text.strip()[-300:]
    return f"fails (exit {run.returncode}" + (f": {shown})" if shown else ")")


def simulate(ctx: Context, db: PacmanDB, fix: str, protect: Sequence[str]) -> Simulation:
    """pacman's own transaction check of every pacman step of `fix`; a step that removes a
    package of `protect` or that pacman refuses rejects the fix."""
    tree = tree_of(ctx)
    if not which("pacman", ctx.env):
        return unsimulated(fix, "pacman is not installed here", tool=TOOL, tree=tree)
    if trap := db.trap():
        return unsimulated(fix, f"the tree's database is not used: {trap}", tool=TOOL, tree=tree)
    released = _RELEASE.findall(fix)
    planned = _planned(db, fix, released)
    if isinstance(planned, str):
        return unsimulated(fix, planned, tool=TOOL, tree=tree)
    actions, skipped = planned
    private = Path(tempfile.mkdtemp(prefix="vkdoctor-pacman-"))
    try:
        base = _private_pacman(ctx, db, private, released)
        said = _transaction_checks(ctx, db, base, actions)
        refused = said.refused
        if refused is None and not said.installs and not said.removes:
            refused = (
                "changes nothing (pacman has nothing to do: the sync databases offer "
                "nothing it would install)"
            )
        return simulated(
            fix,
            tool=TOOL,
            tree=tree,
            commands=said.commands,
            skipped=skipped,
            refused=refused,
            installs=said.installs,
            removes=said.removes,
            lost=[p for p in said.removes if p in protect],
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _planned(
    db: PacmanDB, fix: str, released: Sequence[str]
) -> tuple[list[list[str]], tuple[str, ...]] | str:
    """The pacman arguments of each step of `fix`, and what the check leaves out (a refresh of
    the sync databases, the IgnorePkg change); or why pacman cannot simulate it."""
    text = _RELEASE.sub("", fix)
    if released:
        text = text.split(" then ", 1)[-1]
    steps = _steps(text)
    if steps is None:
        said = text.strip()
        return (
            "the fix is advice in words, not a pacman command"
            if said[:1].isupper() or not said.startswith(("sudo ", "pacman "))
            else f"pacman cannot simulate `{said}`"
        )
    if not db.sync_repos():
        return "the tree has no pacman sync database to simulate with (pacman -Sy never ran)"
    actions = []
    skipped: list[str] = []
    for words in steps:
        sync = _sync_args(words)
        if sync is None:
            return f"pacman cannot simulate `{' '.join(words)}`"
        args, refresh = sync
        if refresh and "pacman -Sy (the sync databases as last refreshed)" not in skipped:
            skipped.append("pacman -Sy (the sync databases as last refreshed)")
        actions.append(args)
    if released:
        skipped.append(f"the IgnorePkg change ({', '.join(released)} released for the check)")
    return actions, tuple(skipped)


def _private_pacman(
    ctx: Context, db: PacmanDB, private: Path, released: Sequence[str]
) -> list[str]:
    """pacman over the tree's databases (linked into `private`) with its own configuration,
    cache, log, hooks and keyring there, so that the check writes nothing of the tree's."""
    dbdir = private / "db"
    dbdir.mkdir()
    for sub in ("local", "sync"):
        (dbdir / sub).symlink_to(ctx.resolve(db.db_path) / sub)
    conf = private / "pacman.conf"
    conf.write_text(_config(db, ctx, released))
    return [
        "pacman",
        "--config",
        str(conf),
        "--root",
        str(ctx.root),
        "--dbpath",
        str(dbdir),
        "--cachedir",
        str(private / "cache"),
        "--logfile",
        str(private / "log"),
        "--hookdir",
        str(private / "hooks"),
        "--gpgdir",
        str(private / "gnupg"),
        "--confirm",
        "--color",
        "never",
    ]


@record(kw_only=True)
class _Checked:
    """What pacman's transaction checks said, step by step, until one refused."""

    commands: list[str] = field(default_factory=list)
    installs: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    #: why pacman refused a step (None: every step reached its prompt)
    refused: str | None = None


def _transaction_checks(
    ctx: Context, db: PacmanDB, base: Sequence[str], actions: Sequence[Sequence[str]]
) -> _Checked:
    """Run each step up to pacman's prompt (answered no), collecting what it would install and
    remove; stop at the first step pacman refuses."""
    env = {**ctx.env, "LC_ALL": "C"}
    timeout = min(ctx.options.timeout, 60.0)
    checked = _Checked()
    for args in actions:
        run = run_tool([*base, *args], env=env, timeout=timeout)
        checked.commands.append(_shown(ctx, db, args))
        said = run.stdout + run.stderr
        if _PROCEED not in said and _NOTHING not in said:
            checked.refused = _error(run)
            return checked
        ins, rem = parse_targets(run.stdout)
        checked.installs += ins
        checked.removes += rem
        # pacman's default answer to "Replace X with repo/Y?" is yes: whoever presses
        # Enter loses X, though the check answered no
        for old, new in _REPLACE.findall(said):
            checked.installs.append(f"{new} (replacing {old})")
            checked.removes.append(old)
    return checked
