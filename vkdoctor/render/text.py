"""Text for people: one line per check, details for what needs attention, a verdict at the end."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from vkdoctor.model import CheckResult, CheckStatus, Finding, Report, ReportStatus, Severity
from vkdoctor.render import hex_escape
from vkdoctor.render.escape import visible_report
from vkdoctor.render.style import Style


def _without_fix(message: str, remedy: str | None) -> str:
    """The message without its closing "Fix: X." when the fix line below says X again (the
    package findings carry the whole sentence for JSON readers)."""
    head, sep, fix = message.rpartition(" Fix: ")
    # what follows the command (the simulation that checked it) stays in the message
    command, _, after = fix.partition(". ")
    if sep and remedy and remedy.startswith(command.rstrip(".")):
        return f"{head} {after}" if after else head
    return message


def _indent(text: str, prefix: str, width: int | None = None) -> str:
    if width is None or width <= len(prefix) + 20:
        return "\n".join(prefix + line if line else line for line in text.splitlines())
    import textwrap

    # paths and commands are never split: a long one sticks out rather than breaks; a line
    # indented in the text keeps its indent on the lines it wraps onto
    return "\n".join(
        textwrap.fill(
            line.lstrip(" "),
            width=width,
            initial_indent=prefix + _lead(line),
            subsequent_indent=prefix
            + _lead(line)
            + ("  " if line.lstrip(" ").startswith(("- ", "fix: ", "consequences: ")) else ""),
            break_long_words=False,
            break_on_hyphens=False,
        )
        if line
        else line
        for line in text.splitlines()
    )


def _lead(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" "))]


def _head(f: Finding, text: str, style: Style) -> str:
    """`  ✓ CODE text`, wrapped under itself at the terminal's width."""
    glyph = style.glyph(f.severity)
    line = f"{f.code} {text}"
    if style.width is not None and len(line) + len(glyph) + 3 > style.width > 40:
        import textwrap

        rest = textwrap.wrap(
            line,
            width=style.width - len(glyph) - 3,
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        pad = " " * (len(glyph) + 3)
        line = "\n".join([rest[0], *(pad + r for r in rest[1:])])
    return f"  {style.paint(glyph, f.severity)} {line}"


def fix_owners(findings: list[Finding]) -> dict[int, Finding]:
    """id(finding) -> the finding that prints its fix: one with the same text, or with commands
    that include all of its own (`A && B && C` does what `A && C` does). Of those, the one
    with the most commands, then the fix that says the most, then the most severe, then the
    last; the others refer to it."""
    fixing = [f for f in findings if f.remedy and f.severity.rank >= Severity.WARN.rank]
    text = {id(f): " ".join((f.fix() or "").split()).rstrip(". ") for f in fixing}
    cmds = {id(f): frozenset(f.remedy.commands if f.remedy else ()) for f in fixing}
    rank = {
        id(f): (len(cmds[id(f)]), len(f.fix() or ""), f.severity.rank, i)
        for i, f in enumerate(fixing)
    }
    owners: dict[int, Finding] = {}
    for f in fixing:
        mine = cmds[id(f)]
        same = [g for g in fixing if text[id(g)] == text[id(f)] or (mine and mine <= cmds[id(g)])]
        owners[id(f)] = max(same, key=lambda g: rank[id(g)])
    return owners


def _finding(
    f: Finding,
    style: Style,
    owners: Mapping[int, Finding] | None = None,
    order: Sequence[Finding] = (),
    sudo: bool = True,
    recap: bool = False,
) -> list[str]:
    """A finding's lines (`sudo`: the report's); `owners` (from `fix_owners`): a fix is printed once, with the finding
    that owns it, and the others say "see CODE below" (or above: `order` is how they print).
    `recap`: the failures' fixes are printed in the list of failures at the end (-v)."""
    serious = f.severity.rank >= Severity.WARN.rank
    one_line = f.message and "\n" not in f.message and len(f.message) <= 110
    if f.message and not serious and one_line:
        return [_head(f, f"{f.title}: {f.said(sudo=sudo)}", style), *_evidence(f, style)]
    lines = [_head(f, f.title, style)]
    if f.message and (style.evidence or serious):
        lines.append(
            _indent(_without_fix(f.said(sudo=sudo), f.fix(sudo=sudo)), "      ", style.width)
        )
    if f.remedy and f.severity.rank >= Severity.WARN.rank:
        owner = owners.get(id(f)) if owners is not None else None
        failure = (owner or f).severity.rank >= Severity.FAIL.rank
        if recap and failure and owner in (None, f):
            pass  # in the list of failures below
        elif owner is not None and owner is not f:
            below = recap and failure
            side = "above" if not below and _index(order, owner) < _index(order, f) else "below"
            lines.append(_indent(f"fix: see {owner.code} {side}", "      ", style.width))
        else:
            lines.append(_indent(f"fix: {f.fix(sudo=sudo)}", "      ", style.width))
    return lines + _evidence(f, style)


def _index(order: Sequence[Finding], f: Finding) -> int:
    return next((i for i, x in enumerate(order) if x is f), -1)


def _evidence(f: Finding, style: Style) -> list[str]:
    if not (style.evidence and f.evidence):
        return []
    return ["      evidence:", *evidence_lines(dict(f.evidence), "        ")]


#: characters a terminal would act on (ESC, CR, BEL...): evidence holds file names and
#: variables as found, so they are shown as \xNN, never sent to the terminal
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _scalar(value: object) -> str:
    if value is None:
        return "none"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return hex_escape(str(value), _CONTROL)


def evidence_lines(value: object, indent: str) -> list[str]:
    """A finding's evidence for people: `key: value`, what a key holds indented under it, list
    items as `- item` (JSON is what --json is for)."""
    if isinstance(value, Mapping):
        if not value:
            return [f"{indent}(none)"]
        lines: list[str] = []
        for key, item in value.items():
            lines.extend(_keyed(f"{indent}{_scalar(key)}:", item, indent + "  "))
        return lines
    if isinstance(value, (list, tuple)):
        if not value:
            return [f"{indent}(none)"]
        lines = []
        for item in value:
            lines.extend(_keyed(f"{indent}-", item, indent + "  "))
        return lines
    text = _scalar(value)
    return [f"{indent}{line}" if line else "" for line in text.split("\n")]


def _keyed(head: str, value: object, indent: str) -> list[str]:
    """`head value` on one line when the value is one line, else `head` with the value under it
    (a list item's mapping starts on the dash's line, as YAML writes it)."""
    if isinstance(value, (Mapping, list, tuple)) and value:
        below = evidence_lines(value, indent)
        if head.endswith("-") and isinstance(value, Mapping):
            return [f"{head} {below[0].lstrip()}", *below[1:]]
        return [head, *below]
    if isinstance(value, (Mapping, list, tuple)):
        return [f"{head} (none)"]
    text = _scalar(value)
    if "\n" in text:
        return [head, *evidence_lines(text.rstrip("\n"), indent)]
    return [f"{head} {text}" if text else f"{head} (empty)"]


def _check(
    c: CheckResult,
    style: Style,
    owners: Mapping[int, Finding] | None = None,
    order: Sequence[Finding] = (),
    sudo: bool = True,
) -> list[str]:
    if c.status is CheckStatus.SKIPPED:
        mark = "-" if style.unicode else "--"  # as wide as the other marks
        if not style.verbose:
            return [
                f"  {style.paint(mark, Severity.INFO)} {c.code} {c.title}: skipped ({c.skip_reason})"
            ]
        return [f"  {mark} {c.code} {c.title}: skipped ({c.skip_reason})"]
    serious = any(f.severity.rank >= Severity.WARN.rank for f in c.findings)
    if c.findings and not serious and not style.evidence:
        return [_check_line(c, style)]
    out: list[str] = []
    for f in c.findings:
        out.extend(_finding(f, style, owners, order, sudo, recap=True))
    return out


def _check_line(c: CheckResult, style: Style) -> str:
    """-v: a check with nothing to attend to, on one line: its worst finding's mark, its code
    and its findings' titles (their messages and evidence are -vv's)."""
    worst = max(c.findings, key=lambda f: f.severity.rank)
    titles = [f.title for f in c.findings]
    said = "; ".join(titles[:3]) + (f"; and {len(titles) - 3} more" if len(titles) > 3 else "")
    only = c.findings[0]
    if len(c.findings) == 1 and only.message and "\n" not in only.message[:111]:
        said = f"{only.title}: {only.message}" if len(only.message) <= 110 else said
    return _head(worst, said, style)


def _found_nothing(c: CheckResult) -> bool:
    """A check that ran and had nothing to say: one line per family names them all."""
    return (
        c.status is CheckStatus.RAN
        and len(c.findings) == 1
        and c.findings[0].severity is Severity.OK
        and c.findings[0].message == "none"
    )


def _probe(report: Report, style: Style) -> list[str]:
    from vkdoctor.render.probe_text import probe_lines

    if report.probe is None:
        return []
    return probe_lines(report.probe, style, report.probe_explained_by)


def _consequences(report: Report, cause: Finding, style: Style) -> list[str]:
    """The findings `cause` explains, on one line under it, marked as its consequences."""
    said = consequence_line(report, cause)
    return [_indent(f"consequences: {said}", "      ", style.width)] if said else []


def consequence_line(report: Report, cause: Finding) -> str:
    """The consequences of `cause` in one line ("" when none): `CODE title; CODE (3 findings)`."""
    groups: dict[str, list[Finding]] = {}
    for f in report.consequences(cause):
        groups.setdefault(f.code, []).append(f)
    return "; ".join(
        f"{code} {fs[0].title.removesuffix(f': {cause.code} gives the cause')}"
        if len(fs) == 1
        else f"{code} ({len(fs)} findings)"
        for code, fs in groups.items()
    )


def render(report: Report, *, style: Style, strict: bool = False) -> str:
    report = visible_report(report)
    """-v: every check, family by family. Otherwise one line per area, then what needs
    attention (warnings, then failures, so that the last failure's fix ends the run)."""
    lines = [*(sections(report, style) if style.verbose else brief(report, style)), ""]
    note = root_note(report, style.machine)
    if note:
        lines += [_indent(note, "", style.width), ""]
    lines.append(verdict(report, style=style, strict=strict))
    if style.width is None:
        return "\n".join(lines) + "\n"
    from vkdoctor.render.wrap import fit

    return fit("\n".join(lines), style.width, unicode=style.unicode) + "\n"


#: the finding that sums up an area that is fine
_HEADLINE = {
    "host": "VKH002",
    "drivers": "VKD001",
    "layers": "VKI001",
    "packages": "VKP006",
    "container": "VKC001",
    "disk": "VKS001",
    "hardware": "VKG001",
    "load": "VKT002",
    "overlay": "VKO001",
    "compute": "VKR001",
}


def _area_text(family: str, checks: list[CheckResult]) -> tuple[str, Severity]:
    """What an area that is fine found, in a few words, and how to mark it (a headline that is
    information, such as "no device", is no tick)."""
    findings = [f for c in checks for f in c.findings]
    if family == "libraries":
        # one finding per target, each naming it; a check with no target says "none"
        targets = sum(1 for f in findings if f.code == "VKL001" and "target" in f.evidence)
        if all(f.severity is Severity.OK for f in findings):
            if not targets:
                return "No driver or layer library to resolve", Severity.INFO
            return f"The libraries of {targets} driver(s) and layer(s) resolve", Severity.OK
        # a library is missing after all, and another check has the failure (VKP002 gives
        # the cause): that, not the targets that load
        said = sorted(
            (f for f in findings if f.severity is Severity.INFO),
            key=lambda f: (f.code == "VKL001", f.code),
        )
        if said:
            f = said[0]
            return f"{f.code} {_one_line(f)}", Severity.INFO
    if family == "compute":
        probe = next((f for f in findings if f.code == "VKR001"), None)
        if probe is not None and probe.message:
            # the figure when it passed; otherwise what it says in one line (the details are
            # in the Probe section and in the finding that gives the cause)
            text = probe.message if probe.severity is Severity.OK else probe.title
            return text.rstrip("."), probe.severity
    wanted = _HEADLINE.get(family)
    headline = [f for f in findings if f.code == wanted and f.message != "none"]
    if headline:
        sev = max((f.severity for f in headline), key=lambda s: s.rank)
        return ", ".join(f.title for f in headline), sev
    said = [f for f in findings if f.message != "none"]
    if said:
        # no headline among them: the first that says something
        f = min(said, key=lambda f: f.code)
        if f.title.lower() == family and _short(f.message):
            return f.message, f.severity
        return _one_line(f), f.severity
    ran = [c for c in checks if c.status is CheckStatus.RAN]
    return f"{len(ran)} check(s): nothing found", Severity.OK


def _short(message: str) -> bool:
    return bool(message) and "\n" not in message and len(message) <= 110


def _one_line(f: Finding) -> str:
    return f"{f.title}: {f.message}" if _short(f.message) else f.title


def _pad(text: str, size: int) -> str:
    return text + " " * max(size - len(text), 0)


def brief(report: Report, style: Style) -> list[str]:
    report = visible_report(report)
    """One line per area, the probe's details when it failed, then the findings that need
    attention: warnings, then failures, each fix printed once."""
    families: dict[str, list[CheckResult]] = {}
    for c in report.checks:
        families.setdefault(c.family, []).append(c)
    size = max((len(f) for f in families), default=0) + 2
    lines: list[str] = []
    for family, checks in families.items():
        name = _pad(family.capitalize(), size)
        findings = [f for c in checks for f in c.findings]
        worst = max((f.severity for f in findings), key=lambda s: s.rank, default=Severity.OK)
        ran = [c for c in checks if c.status is not CheckStatus.SKIPPED]
        if not ran:
            mark = "-" if style.unicode else "--"
            reasons = sorted({str(c.skip_reason) for c in checks})
            text = f"skipped ({'; '.join(reasons)})"
            lines.append(_line(f"{style.paint(mark, Severity.INFO)} {name}", text, style, size))
            continue
        if worst.rank >= Severity.WARN.rank:
            bad = [f for f in findings if f.severity.rank >= Severity.WARN.rank]
            codes = " ".join(dict.fromkeys(f.code for f in bad))
            word = {Severity.WARN: "warning", Severity.FAIL: "failed", Severity.ERROR: "error"}
            text, mark_sev = f"{codes} {word[worst]} (below)", worst
        else:
            text, mark_sev = _area_text(family, checks)
            mark_sev = Severity.OK if mark_sev is Severity.OK else Severity.INFO
            if family == "compute" and report.probe is not None:
                seconds = report.probe.seconds
                if seconds is not None:
                    text += f", in {float(seconds):.1f} s"
        glyph = style.paint(style.glyph(mark_sev), mark_sev)
        lines.append(_line(f"{glyph} {name}", text, style, size))
    lines.append("  (-v lists every check)")
    if report.overlay:
        lines += [
            "",
            "Overlay",
            f"  export LD_LIBRARY_PATH={report.overlay.ld_library_path}",
        ]
    if report.probe is not None and (
        report.probe.status != "pass" or report.command == "run-probe"
    ):
        # run-probe asked for the probe: its details are the point
        lines += ["", "Probe", *_probe(report, style)]
    warnings = [f for f in report.findings if f.severity is Severity.WARN]
    # the deepest cause first (drivers, libraries, then the load and the probe they break),
    # each with the consequences it explains under it
    failures = [f for f in report.findings if f.severity.rank >= Severity.FAIL.rank]
    order = [*warnings, *failures]
    owners = fix_owners(order)
    hint = " (vkdoctor explain CODE: why, and other ways to fix)"
    for heading, chosen in (("Warnings", warnings), ("Failures", failures)):
        if chosen:
            lines += ["", heading + hint]
            hint = ""
            for f in chosen:
                lines.extend(_finding(f, style, owners, order, report.sudo))
                lines.extend(_consequences(report, f, style))
    return lines


def _line(head: str, text: str, style: Style, size: int) -> str:
    """`  ✓ Area    text`, the text wrapped under itself."""
    first = f"  {head}"
    if style.width is None:
        return f"{first}{text}" if first.endswith(" ") else f"{first} {text}"
    from vkdoctor.render.wrap import wrap

    rest = " " * (len(style.glyph(Severity.OK)) + 3 + size)
    return "\n".join(wrap(text, style.width, first if first.endswith(" ") else first + " ", rest))


def root_note(report: Report, here: str = "") -> str | None:
    """With --root, the fixes are the tree's: its paths and its package manager. `here` is the
    machine vkdoctor runs on ("" when not known)."""
    root = report.host.root or "/"
    if root == "/" or not any(
        f.remedy and f.severity.rank >= Severity.WARN.rank for f in report.findings
    ):
        return None
    machine = report.host.machine
    foreign = (
        f" (an {machine} tree: chroot needs qemu-user-static here, or use docker run --platform)"
        if machine and here and machine != here
        else ""
    )
    return (
        f"The fixes that change files or packages are for the system in {root}: run them inside "
        f"it (sudo chroot {root} ..., or in the image's build){foreign}, where the paths above "
        "are its own. Those that unset or export a variable are for this shell."
    )


def sections(report: Report, style: Style) -> list[str]:
    report = visible_report(report)
    """The report's lines, family by family, without the verdict."""
    lines: list[str] = []
    families: dict[str, list[CheckResult]] = {}
    hinted = False
    for c in report.checks:
        families.setdefault(c.family, []).append(c)
    for checks in families.values():
        checks.sort(key=lambda c: c.code)  # VKL004 before VKL005, whatever ran first
    order = [f for checks in families.values() for c in checks for f in c.findings]
    owners = fix_owners(order)
    for family, checks in families.items():
        if lines:
            lines.append("")
        lines.append(family.capitalize())
        quiet: list[str] = []
        for c in checks:
            if not style.verbose and _found_nothing(c):
                quiet.append(c.code)
            else:
                lines.extend(_check(c, style, owners, order, report.sudo))
        if quiet:
            glyph = style.paint(style.glyph(Severity.OK), Severity.OK)
            hint = "" if hinted else " (-v lists each check)"
            hinted = True
            lines.append(f"  {glyph} {' '.join(quiet)}: nothing found{hint}")
    if report.overlay:
        lines += [
            "",
            "Overlay",
            f"  export LD_LIBRARY_PATH={report.overlay.ld_library_path}",
        ]
    if report.probe is not None:
        lines += ["", "Probe", *_probe(report, style)]
    return lines + _recap(report, style)


def _recap(report: Report, style: Style) -> list[str]:
    """-v's last lines before the verdict: each failure's title and its fix (printed here, not
    in its area), the deepest cause first as in the short report, each with its consequences."""
    failures = [f for f in report.findings if f.severity.rank >= Severity.FAIL.rank]
    if not failures:
        return []
    owners = fix_owners(failures)
    lines = ["", "Failures (the reasons are above, under each area)"]
    for f in failures:
        lines.append(_head(f, f.title, style))
        owner = owners.get(id(f))
        if f.remedy and owner is not None and owner is not f:
            side = "above" if _index(failures, owner) < _index(failures, f) else "below"
            lines.append(_indent(f"fix: see {owner.code} {side}", "      ", style.width))
        elif f.remedy:
            lines.append(_indent(f"fix: {f.fix(sudo=report.sudo)}", "      ", style.width))
        lines.extend(_consequences(report, f, style))
    return lines


def verdict(report: Report, *, style: Style, strict: bool = False) -> str:
    report = visible_report(report)
    status = report.status(strict=strict)
    counts = {s: 0 for s in Severity}
    for f in report.findings:
        counts[f.severity] += 1
    parts = []
    failed = [f for f in report.findings if f.severity is Severity.FAIL]
    if failed:
        # each failure by its code and title, its one-line cause
        named = [f"{f.code} {_cause(f.title)}" for f in failed[:_NAMED]]
        more = len(failed) - len(named)
        parts.append("; ".join(named) + (f"; and {more} more failure(s)" if more else ""))
    probe_failed = any(f.code == "VKR001" and f.severity is Severity.FAIL for f in report.findings)
    if report.probe is not None and report.probe.status != "pass" and not probe_failed:
        # (VKR001's failure already counts the probe among the failed)
        cause = report.probe_explained_by
        parts.append(
            f"probe {report.probe.status}" + (f" ({cause}'s consequence)" if cause else "")
        )
    if counts[Severity.ERROR]:
        parts.append(f"{counts[Severity.ERROR]} internal error(s)")
    if counts[Severity.WARN]:
        parts.append(f"{counts[Severity.WARN]} warning(s)" + (" (--strict)" if strict else ""))
    word = {
        ReportStatus.OK: "OK",
        ReportStatus.WARN: "OK with warnings",
        ReportStatus.FAIL: "FAIL",
        ReportStatus.ERROR: "ERROR",
    }[status]
    sev = {
        ReportStatus.OK: Severity.OK,
        ReportStatus.WARN: Severity.WARN,
        ReportStatus.FAIL: Severity.FAIL,
        ReportStatus.ERROR: Severity.ERROR,
    }[status]
    tail = f": {'; '.join(parts)}" if parts else ""
    overlay = report.overlay
    if overlay is not None and overlay.applied and status in (ReportStatus.OK, ReportStatus.WARN):
        # the user asked for the overlay: the verdict holds for programs run under it only
        tail += f"; only under the overlay: run your programs as {overlay.exec}"
    text = f"vkdoctor: {word}{tail}"
    if style.width is not None:
        from vkdoctor.render.wrap import wrap

        text = "\n".join(wrap(text, style.width, "", "  "))
    return "\n".join(style.paint(x, sev, bold=True) for x in text.split("\n"))


#: the failures the verdict names; the rest are counted
_NAMED = 4


def _cause(title: str) -> str:
    """A title as part of the verdict's sentence: no closing period, no capital unless a name."""
    # one line, whatever a file name in it holds: the verdict is no place for a line break
    # (under --format github, a line of its own could be a workflow command)
    title = hex_escape(" ".join(title.split()), _CONTROL).rstrip(". ")
    head = title.split(" ", 1)[0]
    if head[:1].isupper() and head[1:].islower() and head.removesuffix("'s") not in _NAMES:
        title = title[:1].lower() + title[1:]
    return title


#: words a verdict keeps capitalised: they are names
_NAMES = frozenset({"Mesa", "Vulkan", "Debian", "Ubuntu", "Fedora", "Arch", "Python", "Intel"})
