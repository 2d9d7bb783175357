"""The report's `drivers` list (the drivers the loader will try, in its order, with verdicts)
and its `driver_search` (how the loader finds them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vkdoctor.loader import driver_scan, explicit_layers, layer_scan
from vkdoctor.loader.icd import LOADS, verdict
from vkdoctor.loader.known import known_driver
from vkdoctor.loader.layerrecords import Layer
from vkdoctor.model import CheckResult
from vkdoctor.model.context import Context
from vkdoctor.model.record import ABSENT, replace
from vkdoctor.model.report_records import (
    DriverLibrary,
    DriverLoad,
    DriverMiss,
    DriverRow,
    DriverSearch,
    ImplicitLayer,
    SearchPathEntry,
)


def _predicted_errors(ctx: Context) -> dict[str, str]:
    """Driver manifest -> the dlerror() ld.so would give for its library (vkdoctor.elf), for
    the drivers whose library cannot load."""
    from vkdoctor.closures.targets import target_resolutions, undefined_by_target

    out = {
        t.manifest: res.predicted_error
        for t, res in ctx.fact(target_resolutions)
        if t.kind == "driver" and res.predicted_error is not None
    }
    for t, _res, missing in ctx.fact(undefined_by_target):
        # undefined symbols bound at dlopen (BIND_NOW, a data relocation): it fails (VKL006)
        now = [u for u in missing if u.fails_dlopen]
        if t.kind == "driver" and now and t.manifest not in out:
            out[t.manifest] = now[0].error
    return out


def _closures(
    ctx: Context,
) -> dict[str, tuple[tuple[DriverLibrary, ...], tuple[DriverMiss, ...]]]:
    """Driver manifest -> the libraries ld.so maps for its library (each with the name it was
    asked for, the file, how it was found, who needed it) and the names it cannot find. The
    resolutions are the library checks' own (a run-wide fact), not computed again."""
    from vkdoctor.closures.targets import target_resolutions

    out = {}
    for t, res in ctx.fact(target_resolutions):
        if t.kind != "driver":
            continue
        out[t.manifest] = (
            tuple(
                DriverLibrary(
                    name=lib.name, path=lib.path, how=lib.how.value, needed_by=lib.needed_by
                )
                for lib in res.libraries
            ),
            tuple(DriverMiss(name=m.name, needed_by=m.needed_by) for m in res.misses),
        )
    return out


def driver_rows(ctx: Context) -> tuple[DriverRow, ...]:
    """One row per manifest the loader lists (schema: report.drivers[]). The verdict is the
    loader's view of the manifest and ld.so's of the library it names: a driver whose library
    cannot load is a failure even though the loader accepts its manifest."""
    scan = driver_scan(ctx)
    loads = any(d.outcome == LOADS for d in scan.drivers)
    predicted = _predicted_errors(ctx) if loads else {}
    closures = _closures(ctx) if loads else {}
    rows = []
    for index, d in enumerate(scan.drivers):
        v, reason = verdict(d, scan)
        error = predicted.get(d.manifest) if d.outcome == LOADS else None
        if error is not None:
            v = "fail"
            reason = (
                f"{d.manifest}: the loader dlopens {d.library}, but ld.so cannot load it: {error}"
            )
        closure = closures.get(d.manifest)
        rows.append(
            DriverRow(
                index=index,
                manifest=d.manifest,
                origin=d.origin,
                search_entry=d.entry,
                library_path=d.library_path,
                library=d.evidence.get("library_found", d.library),
                library_rule=d.library_rule,
                dlopen_name=d.library if d.dlopened else None,
                api_version=d.api_version,
                file_format_version=d.file_format_version,
                library_arch=d.library_arch,
                is_portability_driver=d.is_portability_driver,
                driver=known_driver(d.library),
                outcome=d.outcome,
                predicted_error=error,
                verdict=v,
                reason=reason,
                libraries=closure[0] if closure else ABSENT,
                missing=closure[1] if closure else ABSENT,
            )
        )
    return tuple(rows)


def drivers_report(ctx: Context) -> tuple[DriverRow, ...]:
    """The report's `drivers` list. A bug here shows up as VKX000 in the VKD checks, not twice."""
    try:
        return driver_rows(ctx)
    except Exception:
        return ()


def with_load_results(
    ctx: Context, rows: tuple[DriverRow, ...], load_chosen: bool
) -> tuple[DriverRow, ...]:
    """Each driver row with what the real load test saw for its manifest, when it ran."""
    if not ctx.live or not load_chosen:
        return rows
    from vkdoctor.children.loadtest import classify
    from vkdoctor.facts.loadtest import load_test
    from vkdoctor.model import Severity

    try:
        run = load_test(ctx)
        outcomes = {o.target.manifest: o for o in run.outcomes if o.target.kind == "driver"}
    except Exception:  # the VKT checks report a broken load test
        return rows
    out = []
    for row in rows:
        outcome = outcomes.get(row.manifest)
        if outcome is None:
            out.append(row)
            continue
        shown = outcome.as_dict()
        tested = replace(
            row,
            load=DriverLoad(
                dlopen=shown["dlopen"],
                dlerror=shown["dlerror"],
                instance=shown["instance"],
                vk_result=shown["vk_result"],
                devices=tuple(shown["devices"]),
                signal=shown["signal"],
            ),
        )
        seen = classify(outcome, env=ctx.env, loader_version=run.loader_version)
        if seen.severity.rank > Severity(row.verdict).rank:
            # the real load has the last word: a driver whose manifest and libraries look
            # right but that does not load, crashes or fails vkCreateInstance is no "ok"
            tested = replace(
                tested,
                verdict=seen.severity.value,
                reason=f"the real load test: {seen.title}. {seen.message}",
            )
        out.append(tested)
    return tuple(out)


def with_packages(
    rows: tuple[DriverRow, ...], results: Sequence[CheckResult]
) -> tuple[DriverRow, ...]:
    """Each driver row, and each library of its closure, with the package that owns it, as the
    forked VKP009 found (nothing is looked up again here); rows unchanged when it did not run."""
    import os.path

    files: Mapping[str, str | None] = next(
        (f.evidence.get("files") or {} for r in results if r.code == "VKP009" for f in r.findings),
        {},
    )
    if not files:
        return rows

    def owner(path: object) -> str | None:
        if not isinstance(path, str):
            return None
        return files.get(path) or files.get(os.path.normpath(path))

    out = []
    for row in rows:
        if row.libraries is ABSENT:
            out.append(row)
            continue
        out.append(
            replace(
                row,
                package=owner(row.library),
                libraries=tuple(replace(lib, package=owner(lib.path)) for lib in row.libraries),
            )
        )
    return tuple(out)


def driver_search(ctx: Context) -> DriverSearch | None:
    """The report's `driver_search`: the loader, the driver search path in its order, and the
    layers every application gets (implicit ones, and explicit ones the environment turns on).
    None when the scan itself broke (the VKD checks say so as VKX000)."""
    try:
        scan = driver_scan(ctx)
        implicit = layer_scan(ctx).active
        explicit = explicit_layers(ctx).active
    except Exception:
        return None
    return DriverSearch(
        loader_version=scan.loader.text,
        loader_path=scan.loader.path,
        override=scan.plan.override,
        entries=tuple(SearchPathEntry(path=e.path, origin=e.origin) for e in scan.plan.entries),
        implicit_layers=tuple(_layer_row(layer) for layer in implicit),
        explicit_layers=tuple(_layer_row(layer) for layer in explicit),
    )


def _layer_row(layer: Layer) -> ImplicitLayer:
    return ImplicitLayer(
        name=layer.name,
        library=layer.library_found or layer.library,
        # an explicit layer's disable_environment is never read by the loader
        disable_env=None if layer.explicit else layer.disable_env,
        library_state=layer.library_state,
        manifest=layer.manifest,
        api_version=layer.api_version,
    )
