"""Plain-text lines about a plan, for the overlay and exec commands' stderr and for findings."""

from __future__ import annotations

import shlex
from pathlib import Path

from vkdoctor.model.context import Context
from vkdoctor.overlay.plan import Plan, chosen_dirs


def summary_lines(plan: Plan) -> list[str]:
    """What was missing, what supplies it, what was refused, and which places were bad."""
    lines: list[str] = []
    for need in plan.needs:
        by = ", ".join(need.needed_by)
        chosen = plan.chosen.get(need.soname)
        cands = plan.search.candidates.get(need.soname, [])
        if chosen is not None:
            lines.append(f"{need.soname} (needed by {by}): using {chosen.real} ({chosen.origin})")
        else:
            lines.append(f"{need.soname} (needed by {by}): no usable candidate")
        for cand in cands:
            if cand is chosen:
                continue
            verdict = "also acceptable, not chosen" if cand.accepted else f"refused: {cand.reason}"
            lines.append(f"  {cand.path} ({cand.origin}): {verdict}")
    for refusal in plan.refused:
        lines.append(f"not in the overlay: {refusal.soname}: {refusal.reason}")
    for problem in plan.problems:
        lines.append(f"{problem.origin} {problem.path}: {problem.message}")
    for err in plan.package_errors:
        lines.append(f"package: {err}")
    for pkg in plan.packages:
        out = pkg.get("linked_out") or {}
        for soname, target in sorted(out.items()):
            line = (
                f"package {pkg['package']} holds {soname} only as a link to {target}, outside "
                "the package: not used"
            )
            if Path(target).is_file():
                line += f" (the file is here: --search-path {Path(target).parent})"
            lines.append(line)
        absent = [s for s in pkg["absent"] if s not in out]
        if absent:
            lines.append(f"package {pkg['package']} does not contain {', '.join(absent)}")
    if plan.store_note:
        lines.append(f"store: {plan.store_note}")
    for d in plan.dropped:
        lines.append(f"LD_LIBRARY_PATH entry {d.entry!r} dropped: {d.reason}")
    if plan.unsupplied:
        lines.append(
            "looked for "
            + ", ".join(plan.unsupplied)
            + " in: "
            + ("; ".join(plan.looked_in()) or "no directory")
        )
        if not any(c.origin == "search path" for cs in plan.search.candidates.values() for c in cs):
            lines.append(
                f"to supply {', '.join(plan.unsupplied)}, give the directory or the package "
                "file that holds a matching build: --search-path DIR (or VKDOCTOR_SEARCH_PATH), "
                "--from-package FILE"
            )
    return lines


def export_line(plan: Plan) -> str:
    assert plan.ld_path is not None
    return f"export LD_LIBRARY_PATH={shlex.quote(plan.ld_path.value)}"


def exec_command(plan: Plan, cmd: str = "CMD") -> str:
    """The command that rebuilds (or reuses) this overlay and runs `cmd` under it."""
    parts = ["vkdoctor", "exec"]
    for d in chosen_dirs(plan):
        if "/extracted/" not in d:
            parts += ["--search-path", shlex.quote(d)]
    for pkg in plan.packages:
        if pkg["found"] and pkg["origin"] == "package":
            parts += ["--from-package", shlex.quote(pkg["package"])]
    return " ".join([*parts, "--", cmd])


def shadowing_copies(ctx: Context) -> list[tuple[str, str]]:
    """What VKL003 says when no library is missing but copies that win lack symbol versions
    (an old libstdc++ first on LD_LIBRARY_PATH, or bundled behind an RPATH): each problem, and
    its fix. An overlay only adds missing sonames, so it cannot help with these."""
    from vkdoctor.closures.versions import (
        fails_dlopen,
        version_fix,
        version_problems,
        version_title,
    )

    return [
        (
            f"no library is missing, but {version_title(g)} (VKL003: `vkdoctor check` says which "
            "libraries need it)",
            version_fix(ctx, g) or "vkdoctor explain VKL003",
        )
        for g in ctx.fact(version_problems)
        if fails_dlopen(g)
    ]
