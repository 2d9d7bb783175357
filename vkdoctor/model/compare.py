"""Why it works there and not here: two reports compared (`vkdoctor diff`), and many reports
summed up (`vkdoctor summary`). Pure functions on the JSON reports (vkdoctor.model.reportfile reads
them); vkdoctor.render.compare prints the results."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from vkdoctor.model.digits import natural_key
from vkdoctor.model.record import field, record, replace
from vkdoctor.model.report_records import LAYER_LIBRARY_PROBLEMS

#: report status -> verdict (what `check` exits with)
VERDICTS = {"ok": "pass", "warn": "pass", "fail": "fail", "error": "error"}
_RANK = {"ok": 0, "info": 1, "warn": 2, "fail": 3, "error": 4}


def verdict(doc: Mapping[str, Any]) -> str:
    return VERDICTS.get(str(doc.get("status")), "error")


@record(frozen=True, kw_only=True)
class Change:
    """One fact that differs: its name and its value on each side (None: absent there)."""

    what: str
    a: str | None
    b: str | None


@record(frozen=True, kw_only=True)
class DriverDiff:
    """One driver as the two reports see it (None: the report does not list it)."""

    name: str
    a: str | None
    b: str | None
    #: the driver loads on one side and not on the other (or is only on one side)
    decisive: bool
    changes: tuple[Change, ...] = ()


@record(frozen=True, kw_only=True)
class FindingDiff:
    """The findings of one code, where they differ: (severity, title, message) on each side."""

    code: str
    a: tuple[tuple[str, str, str], ...]
    b: tuple[tuple[str, str, str], ...]

    @property
    def worst_a(self) -> str:
        return max((s for s, _, _ in self.a), key=lambda s: _RANK.get(s, 4), default="absent")

    @property
    def worst_b(self) -> str:
        return max((s for s, _, _ in self.b), key=lambda s: _RANK.get(s, 4), default="absent")

    @property
    def matters(self) -> bool:
        """A warning or failure on one side that the other does not have word for word."""
        a = {(s, t) for s, t, _ in self.a if _RANK.get(s, 4) >= 2}
        b = {(s, t) for s, t, _ in self.b if _RANK.get(s, 4) >= 2}
        return a != b


@record(frozen=True, kw_only=True)
class Comparison:
    verdict_a: str
    verdict_b: str
    status_a: str
    status_b: str
    #: sentences that say why the verdicts differ, the likeliest cause first
    causes: tuple[str, ...]
    drivers: tuple[DriverDiff, ...]
    versions: tuple[Change, ...]
    environment: tuple[Change, ...]
    #: whether each report records its environment (one by an older vkdoctor does not)
    environment_recorded: tuple[bool, bool]
    findings: tuple[FindingDiff, ...]
    #: codes whose findings differ only in information (ok, info), or in words
    reworded: tuple[str, ...]
    probe: tuple[Change, ...]
    packages: tuple[Change, ...]
    rest: tuple[Change, ...]

    @property
    def same_verdict(self) -> bool:
        return self.verdict_a == self.verdict_b


def _s(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return str(value)


def _list(doc: Mapping[str, Any], key: str) -> list[Any]:
    value = doc.get(key)
    return value if isinstance(value, list) else []


def _map(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, Mapping) else {}


def _get(doc: Mapping[str, Any], *keys: str) -> Any:
    value: Any = doc
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


# --- drivers --------------------------------------------------------------------------------


def _base(path: Any) -> str:
    return posixpath.basename(str(path or ""))


def _driver_name(row: Mapping[str, Any]) -> str:
    return _base(row.get("manifest")) or "?"


def _loads(row: Mapping[str, Any]) -> bool:
    return str(row.get("verdict")) not in ("fail", "error") and row.get("outcome") == "loads"


def _usable(row: Mapping[str, Any] | None) -> bool:
    """It loads and, when the real load test ran, gives a device: a driver that loads and
    finds no hardware (Intel's on an AMD machine) changes no verdict."""
    if row is None or not _loads(row):
        return False
    load = row.get("load")
    if isinstance(load, Mapping) and isinstance(load.get("devices"), list):
        return bool(load["devices"])
    return True


def driver_state(row: Mapping[str, Any] | None) -> str | None:
    """One phrase: loads, with its devices; or why not."""
    if row is None:
        return None
    load = row.get("load") if isinstance(row.get("load"), Mapping) else None
    if _loads(row):
        if load is not None and isinstance(load.get("devices"), list):
            names = [str(d.get("name")) for d in load["devices"] if isinstance(d, Mapping)]
            return "loads, " + (", ".join(names) if names else "no device")
        return "loads (" + str(row.get("verdict")) + ")"
    reason = str(row.get("reason") or row.get("outcome") or "does not load")
    said = reason.removeprefix(f"{row.get('manifest')}: ")
    if row.get("verdict") in ("fail", "error"):
        return "fails: " + said
    return "skipped: " + said.removesuffix("; skipped")


def _match_drivers(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]]:
    """Pairs of rows that are the same driver: the same manifest, else a manifest of the same
    name, else the same library file name (a VK_DRIVER_FILES copy of the system's manifest)."""
    keys: tuple[Callable[[Mapping[str, Any]], str], ...] = (
        lambda r: str(r.get("manifest")),
        lambda r: _base(r.get("manifest")),
        lambda r: _base(r.get("library_path") or r.get("library")),
    )
    # by index, each key's rows on the right listed once: linear in the rows, not quadratic
    left = dict(enumerate(a))
    right = dict(enumerate(b))
    pairs: list[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]] = []
    for key in keys:
        waiting: dict[str, list[int]] = {}
        for j, r in right.items():
            waiting.setdefault(key(r), []).append(j)
        for i, row in list(left.items()):
            k = key(row)
            candidates = waiting.get(k) if k else None
            if candidates:
                pairs.append((row, right.pop(candidates.pop(0))))
                del left[i]
    pairs += [(row, None) for row in left.values()]
    pairs += [(None, row) for row in right.values()]
    order = {id(r): i for i, r in enumerate([*a, *b])}
    pairs.sort(key=lambda p: order[id(p[0] if p[0] is not None else p[1])])
    return pairs


def _lib_desc(lib: Mapping[str, Any] | None, missing: bool = False) -> str | None:
    if missing:
        return "missing"
    if lib is None:
        return None
    text = f"{lib.get('path')} ({lib.get('how')}"
    if lib.get("package"):
        text += f", {lib.get('package')}"
    elif "package" in lib:
        text += ", no package"
    return text + ")"


_NOT_LOADED = "not in its closure"


def _closure(row: Mapping[str, Any]) -> tuple[dict[str, Mapping[str, Any]], set[str]]:
    libs = _list(row, "libraries")
    # the driver's own library is the row's `library`: compared there
    found = {
        str(lib.get("name")): lib
        for lib in libs
        if isinstance(lib, Mapping) and lib.get("needed_by") is not None
    }
    miss = _list(row, "missing")
    missing = {str(m.get("name")) for m in miss if isinstance(m, Mapping)}
    return found, missing


def _driver_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    out: list[Change] = []
    for key, label in (
        ("manifest", "manifest"),
        ("library", "library"),
        ("library_rule", "library named as"),
        ("package", "package"),
        ("api_version", "API version"),
        ("origin", "found through"),
    ):
        va, vb = _s(a.get(key)), _s(b.get(key))
        if key == "package":
            va = va or ("no package" if key in a else None)
            vb = vb or ("no package" if key in b else None)
        if va != vb and (key in a or key in b):
            out.append(Change(what=label, a=va, b=vb))
    la, lb = _map(a, "load"), _map(b, "load")
    for key in ("dlopen", "dlerror", "instance", "signal"):
        va, vb = _s(la.get(key)), _s(lb.get(key))
        if va != vb:
            out.append(Change(what=f"load test {key}", a=va, b=vb))
    if not ("libraries" in a and "libraries" in b):
        if "libraries" in a or "libraries" in b:
            out.append(
                Change(
                    what="libraries",
                    a=None if "libraries" not in a else f"{len(a['libraries'])} recorded",
                    b=None if "libraries" not in b else f"{len(b['libraries'])} recorded",
                )
            )
        return out
    found_a, miss_a = _closure(a)
    found_b, miss_b = _closure(b)
    first: list[Change] = []
    later: list[Change] = []
    for name in dict.fromkeys([*miss_a, *miss_b, *found_a, *found_b]):
        da = _lib_desc(found_a.get(name), name in miss_a and name not in found_a)
        db = _lib_desc(found_b.get(name), name in miss_b and name not in found_b)
        if da == db:
            continue
        change = Change(what=name, a=da or _NOT_LOADED, b=db or _NOT_LOADED)
        # a missing library first: the rest of the closure differs because of it
        (first if "missing" in (da, db) else later).append(change)
    out += first
    # a library one closure has and the other lacks only because a missing one stopped the
    # search below it is a consequence: said in one line, not one each
    roots = {str(a.get("library")), str(b.get("library"))}
    direct = {
        name for name, lib in (*found_a.items(), *found_b.items()) if lib.get("needed_by") in roots
    }
    consequence = [c for c in later if _NOT_LOADED in (c.a, c.b) and c.what not in direct]
    out += [c for c in later if c not in consequence]
    if consequence and first:
        only_a = sum(1 for c in consequence if c.b == _NOT_LOADED)
        only_b = len(consequence) - only_a
        out.append(
            Change(
                what="(below the missing libraries)",
                a=f"{only_a} more libraries" if only_a else None,
                b=f"{only_b} more libraries" if only_b else None,
            )
        )
    else:
        out += consequence
    return out


def compare_drivers(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> tuple[DriverDiff, ...]:
    out = []
    for ra, rb in _match_drivers(a, b):
        name = _driver_name(ra if ra is not None else rb or {})
        if ra is not None and rb is not None and _driver_name(rb) != name:
            name = f"{name} / {_driver_name(rb)}"
        sa, sb = driver_state(ra), driver_state(rb)
        changes = _driver_changes(ra, rb) if ra is not None and rb is not None else []
        if sa == sb and not changes:
            continue
        one_side = ra if rb is None else rb if ra is None else None
        decisive = _usable(ra) != _usable(rb) or (
            one_side is not None and str(one_side.get("verdict")) in ("fail", "error")
        )
        out.append(DriverDiff(name=name, a=sa, b=sb, decisive=decisive, changes=tuple(changes)))
    # a driver both list whose fate differs is the likeliest cause; one listed on one side only
    # (another VK_DRIVER_FILES, another install) next
    out.sort(key=lambda d: (not d.decisive, d.a is None or d.b is None))
    return tuple(out)


# --- findings, environment, versions, probe ----------------------------------------------------


def _findings_by_code(doc: Mapping[str, Any]) -> dict[str, list[tuple[str, str, str]]]:
    out: dict[str, list[tuple[str, str, str]]] = {}
    for f in doc.get("findings") or ():
        if isinstance(f, Mapping):
            item = (str(f.get("severity")), str(f.get("title") or ""), str(f.get("message") or ""))
            out.setdefault(str(f.get("code")), []).append(item)
    return out


def compare_findings(
    a: Mapping[str, Any], b: Mapping[str, Any]
) -> tuple[tuple[FindingDiff, ...], tuple[str, ...]]:
    fa, fb = _findings_by_code(a), _findings_by_code(b)
    diffs = []
    for code in dict.fromkeys([*fa, *fb]):
        ia, ib = tuple(fa.get(code, ())), tuple(fb.get(code, ()))
        if sorted(ia) != sorted(ib):
            diffs.append(FindingDiff(code=code, a=ia, b=ib))
    decisive = [d for d in diffs if d.matters]
    reworded = tuple(d.code for d in diffs if not d.matters)
    decisive.sort(key=lambda d: -max(_RANK.get(d.worst_a, -1), _RANK.get(d.worst_b, -1)))
    return tuple(decisive), reworded


def compare_environment(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    ea = _get(a, "host", "environment")
    eb = _get(b, "host", "environment")
    ea = ea if isinstance(ea, Mapping) else {}
    eb = eb if isinstance(eb, Mapping) else {}
    out = []
    for name in sorted({*ea, *eb}):
        va, vb = _s(ea.get(name)), _s(eb.get(name))
        if va != vb:
            out.append(Change(what=str(name), a=va, b=vb))
    # the variables that choose drivers, then ld.so's, then the rest
    order = ("VK_", "LD_", "WGPU_", "XDG_")
    out.sort(key=lambda c: next((i for i, p in enumerate(order) if c.what.startswith(p)), 9))
    return tuple(out)


def _changes(pairs: Iterable[tuple[str, Any, Any]]) -> tuple[Change, ...]:
    return tuple(
        Change(what=what, a=_s(va), b=_s(vb)) for what, va, vb in pairs if _s(va) != _s(vb)
    )


def compare_versions(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    def loader(doc: Mapping[str, Any]) -> str | None:
        path, ver = _get(doc, "host", "loader", "path"), _get(doc, "host", "loader", "version")
        if path is None and ver is None:
            return "not found" if isinstance(_get(doc, "host", "loader"), Mapping) else None
        return f"{ver or 'unknown version'} ({path or 'libvulkan.so.1 not found'})"

    return _changes(
        [
            ("Vulkan loader", loader(a), loader(b)),
            ("wgpu", _get(a, "host", "wgpu"), _get(b, "host", "wgpu")),
        ]
    )


def _adapter(probe: Mapping[str, Any]) -> str | None:
    adapter = probe.get("adapter")
    if not isinstance(adapter, Mapping):
        return None
    return f"{adapter.get('name')} ({adapter.get('type')}, {probe.get('backend')})"


def compare_probe(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    pa, pb = a.get("probe"), b.get("probe")
    if not isinstance(pa, Mapping) and not isinstance(pb, Mapping):
        return ()
    if not isinstance(pa, Mapping) or not isinstance(pb, Mapping):
        return (
            Change(
                what="probe",
                a=_probe_line(pa) if isinstance(pa, Mapping) else "not run",
                b=_probe_line(pb) if isinstance(pb, Mapping) else "not run",
            ),
        )
    return _changes(
        [
            ("status", pa.get("status"), pb.get("status")),
            ("adapter", _adapter(pa), _adapter(pb)),
            (
                "result",
                pa.get("summary") or pa.get("reason"),
                pb.get("summary") or pb.get("reason"),
            ),
        ]
    )


def _probe_line(p: Mapping[str, Any]) -> str:
    return f"{p.get('status')}: {p.get('summary') or p.get('reason') or ''}".rstrip(": ")


def stack_packages(doc: Mapping[str, Any]) -> dict[str, str] | None:
    """Package name -> version of the driver stack (VKP009), None when the report has none."""
    for f in doc.get("findings") or ():
        if isinstance(f, Mapping) and f.get("code") == "VKP009":
            pkgs = _get(f, "evidence", "packages")
            if isinstance(pkgs, list):
                return {
                    str(p.get("name")): str(p.get("version"))
                    for p in pkgs
                    if isinstance(p, Mapping)
                }
    return None


def compare_packages(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    pa, pb = stack_packages(a), stack_packages(b)
    if pa is None or pb is None:
        return ()
    return _changes(
        (name, pa.get(name), pb.get(name)) for name in sorted({*pa, *pb}, key=natural_key)
    )


def _host_line(doc: Mapping[str, Any]) -> str | None:
    return _s(_get(doc, "host", "distro", "name"))


#: an implicit layer's value where a report lists the active implicit layers and not it, or
#: does not list them at all (a scan that broke, or a report of an older vkdoctor)
LAYER_ABSENT = "absent"
LAYER_NOT_RECORDED = "not recorded"


@record(frozen=True, kw_only=True)
class LayerSide:
    """An active implicit layer as one report records it."""

    #: one phrase: loaded (its library), or why the loader goes on without it
    text: str
    #: False when its library cannot be opened; None when the report does not say (older ones)
    loaded: bool | None


def _layer_side(layer: Mapping[str, Any]) -> LayerSide:
    library = layer.get("library")
    off = f"; off with {layer.get('disable_env')}=1" if layer.get("disable_env") else ""
    declared = ", ".join(
        part
        for part in (
            f"API {layer['api_version']}" if layer.get("api_version") else "",
            f"from {layer['manifest']}" if layer.get("manifest") else "",
        )
        if part
    )
    source = f", {declared}" if declared else ""
    if "library_state" not in layer:
        return LayerSide(text=f"active, library {library or 'none'}{source}{off}", loaded=None)
    state = layer.get("library_state")
    why = LAYER_LIBRARY_PROBLEMS.get(str(state)) if state is not None else None
    if why is not None:
        return LayerSide(text=f"not loaded: its library {library} {why}{source}", loaded=False)
    if library is None:
        return LayerSide(text=f"loaded (a meta layer){source}{off}", loaded=True)
    return LayerSide(text=f"loaded: {library}{source}{off}", loaded=state == "ok" or None)


#: the report's lists of the layers every program gets, and what the diff calls each kind
_LAYER_LISTS = (("implicit_layers", "implicit layer"), ("explicit_layers", "explicit layer"))


def layer_sides(doc: Mapping[str, Any]) -> dict[str, dict[str, LayerSide] | None]:
    """The layers every program of that machine gets, by kind ("implicit layer", "explicit
    layer") and name; a kind's None when the report does not list them."""
    out: dict[str, dict[str, LayerSide] | None] = {}
    for key, kind in _LAYER_LISTS:
        listed = _get(doc, "driver_search", key)
        out[kind] = (
            {
                str(layer["name"]): _layer_side(layer)
                for layer in listed
                if isinstance(layer, Mapping) and layer.get("name")
            }
            if isinstance(listed, list)
            else None
        )
    return out


def _layer_text(layers: Mapping[str, LayerSide] | None, name: str) -> str:
    if layers is None:
        return LAYER_NOT_RECORDED
    side = layers.get(name)
    return side.text if side is not None else LAYER_ABSENT


def compare_layers(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    """The layers every program gets that differ (loaded, not loaded and why, absent; their
    versions and manifests), and the variables that put explicit layers into every program or
    take layers out (VK_INSTANCE_LAYERS, VK_LOADER_LAYERS_*)."""
    sides_a, sides_b = layer_sides(a), layer_sides(b)
    rows: list[tuple[str, str | None, str | None]] = []
    for _, kind in _LAYER_LISTS:
        la, lb = sides_a[kind], sides_b[kind]
        for n in sorted({*(la or {}), *(lb or {})}, key=natural_key):
            rows.append((f"{kind} {n}", _layer_text(la, n), _layer_text(lb, n)))
    env_a, env_b = _get(a, "host", "environment"), _get(b, "host", "environment")
    for name in _LAYER_SELECTION:
        rows.append((name, _variable(env_a, name), _variable(env_b, name)))
    return _changes(rows)


def _variable(env: Any, name: str) -> str | None:
    """A variable's value in a report's recorded environment: "unset" when the report records
    the environment without it; None when it records no environment (an older report)."""
    if not isinstance(env, Mapping):
        return None
    return _s(env.get(name)) if name in env else "unset"


def _layer_causes(a: Mapping[str, Any], b: Mapping[str, Any], bad: str) -> list[str]:
    """The layers that can explain why side `bad` fails: one that side loads and the other does
    not (absent there, or its library will not open), or loads from another library, version or
    manifest. A layer whose library will not open is loaded nowhere, so it explains nothing."""
    good = "A" if bad == "B" else "B"
    sides_a, sides_b = layer_sides(a), layer_sides(b)
    out = []
    for _, kind in _LAYER_LISTS:
        la, lb = sides_a[kind], sides_b[kind]
        if la is None or lb is None:
            continue
        mine, theirs = (lb, la) if bad == "B" else (la, lb)
        for name in sorted(mine, key=natural_key):
            m, t = mine[name], theirs.get(name)
            if m.loaded is False:
                continue
            if t is None or t.loaded is False:
                there = "absent" if t is None else t.text
                out.append(
                    f"{kind} {name} is {'loaded' if m.loaded else 'active'} on {bad} only "
                    f"({m.text.removeprefix('loaded: ')}): every Vulkan program there loads it; "
                    f"on {good}: {there}"
                )
            elif t.text != m.text:
                out.append(f"{kind} {name} differs: {bad} {m.text}; {good} {t.text}")
    return out


#: the variables that put layers into every program, or take them out
_LAYER_SELECTION = ("VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE", "VK_LOADER_LAYERS_DISABLE")


def compare_rest(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[Change, ...]:
    def cpu(doc: Mapping[str, Any]) -> str | None:
        model, count = _get(doc, "host", "cpu", "model"), _get(doc, "host", "cpu", "count")
        return None if model is None and count is None else f"{model} x {count}"

    def overlay(doc: Mapping[str, Any]) -> str | None:
        o = doc.get("overlay")
        return _s(o.get("ld_library_path")) if isinstance(o, Mapping) else None

    return _changes(
        [
            ("command", a.get("command"), b.get("command")),
            ("vkdoctor", a.get("vkdoctor_version"), b.get("vkdoctor_version")),
            ("distribution", _host_line(a), _host_line(b)),
            ("kernel", _get(a, "host", "kernel"), _get(b, "host", "kernel")),
            ("machine", _get(a, "host", "machine"), _get(b, "host", "machine")),
            ("root", _get(a, "host", "root"), _get(b, "host", "root")),
            ("python", _get(a, "host", "python"), _get(b, "host", "python")),
            ("cpu", cpu(a), cpu(b)),
            ("overlay", overlay(a), overlay(b)),
        ]
    )


# --- the comparison -----------------------------------------------------------------------------


def _sentence(text: str | None) -> str | None:
    """The first sentence of a driver's state (its reason goes on to explain)."""
    if text is None:
        return None
    head, dot, _ = text.partition(". ")
    return head + ("." if dot else "")


def _causes(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    drivers: Sequence[DriverDiff],
    findings: Sequence[FindingDiff],
    probe: Sequence[Change],
) -> tuple[str, ...]:
    """Why B's verdict is not A's, the likeliest cause first; () when the verdicts agree."""
    va, vb = verdict(a), verdict(b)
    if va == vb:
        return ()
    # fail against error: B is the one compared with A
    bad, good = ("B", "A") if vb != "pass" else ("A", "B")
    out: list[str] = []

    def likeliest(d: DriverDiff) -> tuple[bool, bool]:
        # a driver both list first, then one the failing side lists, then one it lacks
        return (None in (d.a, d.b), (d.b if bad == "B" else d.a) is None)

    for d in sorted((d for d in drivers if d.decisive), key=likeliest):
        state_bad = _sentence(d.b if bad == "B" else d.a)
        state_good = _sentence(d.a if bad == "B" else d.b)
        if state_good is None:
            out.append(f"{d.name} is on {bad} only: {state_bad}")
        elif state_bad is None:
            out.append(f"{d.name} {state_good} on {good}; {bad} does not list it")
        else:
            out.append(f"{d.name} loads on {good} and not on {bad}: {state_bad}")
    one_sided = any(d.decisive and None in (d.a, d.b) for d in drivers)
    env = {c.what: c for c in compare_environment(a, b)}
    for name in _DRIVER_SELECTION:
        c = env.get(name)
        if c is not None and one_sided:
            out.append(
                f"{name} differs (A {c.a if c.a is not None else 'unset'}, B "
                f"{c.b if c.b is not None else 'unset'}): it chooses the drivers the loader lists"
            )
    out += _layer_causes(a, b, bad)
    for c in compare_layers(a, b):
        if not c.what.startswith(("implicit layer", "explicit layer")):
            out.append(
                f"{c.what} differs (A {c.a or LAYER_NOT_RECORDED}, B "
                f"{c.b or LAYER_NOT_RECORDED}): it chooses the layers every program loads"
            )
    for f in findings:
        items = f.b if bad == "B" else f.a
        other = {(s, t) for s, t, _ in (f.a if bad == "B" else f.b)}
        for sev, title, _msg in items:
            if _RANK.get(sev, 4) >= 3 and (sev, title) not in other:
                out.append(f"{f.code} ({sev}) on {bad}: {title}")
    for c in probe:
        if c.what in ("status", "probe") and not any(x.startswith("VKR") for x in out):
            out.append(f"the probe: {c.a or 'absent'} on A, {c.b or 'absent'} on B")
    return tuple(dict.fromkeys(out))


#: the variables that decide which manifests the loader lists or keeps
_DRIVER_SELECTION = (
    "VK_DRIVER_FILES",
    "VK_ICD_FILENAMES",
    "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "XDG_DATA_DIRS",
    "XDG_CONFIG_DIRS",
)


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> Comparison:
    """What differs between reports A and B, the differences that explain the verdict first."""
    rows_a = [r for r in a.get("drivers") or () if isinstance(r, Mapping)]
    rows_b = [r for r in b.get("drivers") or () if isinstance(r, Mapping)]
    drivers = compare_drivers(rows_a, rows_b)
    findings, reworded = compare_findings(a, b)
    probe = compare_probe(a, b)
    return Comparison(
        verdict_a=verdict(a),
        verdict_b=verdict(b),
        status_a=str(a.get("status")),
        status_b=str(b.get("status")),
        causes=_causes(a, b, drivers, findings, probe),
        drivers=drivers,
        versions=compare_versions(a, b),
        environment=compare_environment(a, b),
        environment_recorded=(
            isinstance(_get(a, "host", "environment"), Mapping),
            isinstance(_get(b, "host", "environment"), Mapping),
        ),
        findings=findings,
        reworded=reworded,
        probe=probe,
        packages=compare_packages(a, b),
        rest=(*compare_layers(a, b), *compare_rest(a, b)),
    )


# --- a fleet ----------------------------------------------------------------------------------


@record(frozen=True, kw_only=True)
class Machine:
    label: str
    path: str
    host: str
    adapter: str
    verdict: str
    status: str
    #: the fail and error findings: (code, title)
    failing: tuple[tuple[str, str], ...] = ()
    #: the findings that a failure explains, not failures of their own: (cause's code, code)
    consequences: tuple[tuple[str, str], ...] = ()

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(code for code, _ in self.failing))

    def consequences_of(self, cause: str) -> tuple[str, ...]:
        """The codes of the findings that the failure `cause` explains here."""
        return tuple(code for by, code in self.consequences if by == cause)


@record(frozen=True, kw_only=True)
class Group:
    """One failure (a code and its title) and the machines that have it."""

    code: str
    title: str
    machines: tuple[str, ...] = field(default_factory=tuple)


@record(frozen=True, kw_only=True)
class Fleet:
    machines: tuple[Machine, ...]
    groups: tuple[Group, ...]
    #: the inputs that could not be read as reports: (path, why)
    unreadable: tuple[tuple[str, str], ...] = ()

    @property
    def failed(self) -> int:
        return sum(1 for m in self.machines if m.verdict != "pass")


def labels(paths: Sequence[str]) -> list[str]:
    """Short unique names for report files: the file name without .json, or the directories
    above it when every file has the same name (a CI matrix's artifacts/<job>/vkdoctor.json)."""
    parts = [tuple(p for p in str(path).removesuffix(".json").split("/") if p) for path in paths]
    parts = [p or ("report",) for p in parts]
    while len(parts) > 1 and all(len(p) > 1 for p in parts) and len({p[-1] for p in parts}) == 1:
        parts = [p[:-1] for p in parts]
    longest = max((len(p) for p in parts), default=1)
    k = 1
    while k < longest and len({p[-k:] for p in parts}) < len(parts):
        k += 1
    return ["/".join(p[-k:]) for p in parts]


def _short_host(doc: Mapping[str, Any]) -> str:
    """`ubuntu 24.04`, `debian 12`, `arch`: the distribution, short enough for a table."""
    ident = _get(doc, "host", "distro", "id")
    if ident:
        return f"{ident} {_get(doc, 'host', 'distro', 'version') or ''}".strip()
    return _host_line(doc) or "unknown"


def _adapter_of(doc: Mapping[str, Any]) -> str:
    probe = doc.get("probe")
    if isinstance(probe, Mapping):
        adapter = probe.get("adapter")
        if isinstance(adapter, Mapping) and adapter.get("name"):
            return str(adapter.get("name"))
        return f"none ({probe.get('status')})"
    return "not probed"


def machine(label: str, path: str, doc: Mapping[str, Any]) -> Machine:
    failing = tuple(
        dict.fromkeys(
            (str(f.get("code")), str(f.get("title") or ""))
            for f in doc.get("findings") or ()
            if isinstance(f, Mapping) and _RANK.get(str(f.get("severity")), 0) >= 3
        )
    )
    causes = {code for code, _ in failing}
    consequences = tuple(
        dict.fromkeys(
            (by, str(f.get("code")))
            for f in doc.get("findings") or ()
            if isinstance(f, Mapping)
            and _RANK.get(str(f.get("severity")), 0) < 2
            and isinstance(by := _get(f, "evidence", "explained_by"), str)
            and by in causes
        )
    )
    return Machine(
        label=label,
        path=path,
        host=_short_host(doc),
        adapter=_adapter_of(doc),
        verdict=verdict(doc),
        status=str(doc.get("status")),
        failing=failing,
        consequences=consequences,
    )


def summarize(
    named: Sequence[tuple[str, Mapping[str, Any]]], unreadable: Sequence[tuple[str, str]] = ()
) -> Fleet:
    """The reports (path, report) of many machines: one row each, and the failures grouped;
    the inputs that could not be read (path, why) are carried along to be named."""
    return fleet([machine("", path, doc) for path, doc in named], unreadable)


def fleet(rows: Sequence[Machine], unreadable: Sequence[tuple[str, str]] = ()) -> Fleet:
    """The machines' rows (made with `machine` as each report was read, labels left empty),
    labelled by their paths and listed in their paths' natural order (report-2 before
    report-10), and their failures grouped by code."""
    rows = sorted(rows, key=lambda m: natural_key(m.path))
    names = labels([m.path for m in rows])
    machines = tuple(replace(m, label=label) for label, m in zip(names, rows, strict=True))
    groups: dict[tuple[str, str], list[str]] = {}
    for m in machines:
        for key in m.failing:
            groups.setdefault(key, []).append(m.label)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return Fleet(
        unreadable=tuple(unreadable),
        machines=machines,
        groups=tuple(
            Group(code=code, title=title, machines=tuple(ms)) for (code, title), ms in ordered
        ),
    )
