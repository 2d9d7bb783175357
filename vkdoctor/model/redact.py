"""--redact: a report that can be pasted into a public issue.

Removes what identifies a person or a machine: the home directory (written as `~`), user and host
names, GPU UUIDs and serial numbers. Keeps what a maintainer needs: versions, manifests, paths under
the system directories, the probe's numbers. A pure function: the identifying values come from the
caller (the CLI reads them from the live host), so the rules are testable with any values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vkdoctor.model import CheckResult, Finding, Report
from vkdoctor.model.record import is_record, record, replace

USER = "<user>"
HOST = "<host>"
UUID = "<uuid>"
SERIAL = "<serial>"

#: a home directory equal to one of these (or to "/") would take system paths with it
_SYSTEM_DIRS = frozenset(
    {"/", "/usr", "/etc", "/opt", "/var", "/lib", "/lib64", "/bin", "/sbin", "/srv", "/run", "/tmp"}
)
#: account and host names that identify nobody (system, cloud-image and CI defaults) and that are
#: also words a report needs ("--root", the distro id "debian")
GENERIC_NAMES = frozenset(
    {
        "root",
        "nobody",
        "localhost",
        "runner",
        "admin",
        "user",
        "users",
        "ci",
        "build",
        "builder",
        "docker",
        "gitlab-runner",
        "vagrant",
        "ec2-user",
        "ubuntu",
        "debian",
        "fedora",
        "centos",
        "rocky",
        "alma",
        "arch",
        "archlinux",
        "alpine",
        "opensuse",
    }
)

_HEX = "[0-9a-fA-F]"
_GPU_UUID = re.compile(
    rf"\b(GPU|MIG)-{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b"
)
_UUID = re.compile(rf"\b{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b")
_HEX32 = re.compile(rf"(?<![0-9a-fA-F]){_HEX}{{32}}(?![0-9a-fA-F])")
_SERIAL_TEXT = re.compile(r"(?i)(serial(?:[ _-]?(?:number|no\.?))?\s*[:=]\s*)([^\s,;]+)")
_SECRET_KEY = re.compile(r"(?i)(uuid|serial)")


@record(frozen=True)
class Identity:
    """What identifies the person and the machine that produced a report."""

    homes: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    hostnames: tuple[str, ...] = ()


def _usable_homes(homes: Iterable[str]) -> list[str]:
    out = {h.rstrip("/") for h in homes if h and h.startswith("/")}
    out = {h for h in out if h and h not in _SYSTEM_DIRS}
    return sorted(out, key=len, reverse=True)


def _word(names: Iterable[str]) -> re.Pattern[str] | None:
    """Whole-word matches: `alice` in /tmp/alice-build and alice@box, not in malice."""
    usable = {n for n in names if len(n) > 1 and n.lower() not in GENERIC_NAMES}
    if not usable:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(usable, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")


def text_redactor(identity: Identity) -> Callable[[str], str]:
    """A function that redacts one string."""
    homes = _usable_homes(identity.homes)
    home_re = (
        re.compile(rf"(?:{'|'.join(re.escape(h) for h in homes)})(?=/|$|[^\w.-])")
        if homes
        else None
    )
    user_re = _word(identity.users)
    host_names = set(identity.hostnames) | {h.split(".", 1)[0] for h in identity.hostnames if h}
    host_re = _word(host_names)

    def redact_text(value: str) -> str:
        if home_re:
            value = home_re.sub("~", value)
        value = _GPU_UUID.sub(lambda m: f"{m.group(1)}-{UUID}", value)
        value = _UUID.sub(UUID, value)
        value = _HEX32.sub(UUID, value)
        value = _SERIAL_TEXT.sub(lambda m: m.group(1) + SERIAL, value)
        if host_re:
            value = host_re.sub(HOST, value)
        if user_re:
            value = user_re.sub(USER, value)
        return value

    return redact_text


def redact_value(value: Any, redact_text: Callable[[str], str], *, key: str = "") -> Any:
    """Redact every string inside a JSON-able value, keys too (evidence keyed by path: the home
    directory is in them). Numbers and booleans are kept; the secret test reads the key as it was."""
    if _SECRET_KEY.search(key) and value not in (None, "", [], {}) and not isinstance(value, bool):
        return SERIAL if "serial" in key.lower() else UUID
    if isinstance(value, str):
        return redact_text(value)
    if is_record(value):  # the report's drivers and overlay: each field as a key
        names = type(value).__record_spec__.names
        return replace(
            value, **{n: redact_value(getattr(value, n), redact_text, key=n) for n in names}
        )
    if isinstance(value, Mapping):
        return {
            redact_text(k) if isinstance(k, str) else k: redact_value(v, redact_text, key=str(k))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, redact_text, key=key) for v in value]
    return value


def _finding(f: Finding, r: Callable[[str], str]) -> Finding:
    return replace(
        f,
        title=r(f.title),
        message=r(f.message),
        remedy=replace(f.remedy, commands=tuple(map(r, f.remedy.commands)), text=r(f.remedy.text))
        if f.remedy is not None
        else None,
        evidence=redact_value(dict(f.evidence), r),
    )


def _check(c: CheckResult, r: Callable[[str], str]) -> CheckResult:
    return replace(
        c,
        title=r(c.title),
        skip_reason=r(c.skip_reason) if c.skip_reason is not None else None,
        findings=tuple(_finding(f, r) for f in c.findings),
    )


def redact(report: Report, identity: Identity) -> Report:
    """The same report with identifying values replaced; marks the host facts as redacted."""
    r = text_redactor(identity)
    return replace(
        report,
        host=replace(redact_value(report.host, r), redacted=True),
        checks=tuple(_check(c, r) for c in report.checks),
        drivers=tuple(redact_value(d, r) for d in report.drivers),
        overlay=redact_value(report.overlay, r),
        driver_search=redact_value(report.driver_search, r),
        probe=redact_value(report.probe, r),
    )
