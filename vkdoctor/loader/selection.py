"""Which layers loader 1.3.239 puts into an instance: meta layers, the override layer, blacklists.

Read from loader/loader.c at tag v1.3.239 and checked against the real loader
(tests/test_loader_layer_rules.py). In vkCreateInstance the loader:
1. reads the implicit manifests, keeps the first global override layer (`VK_LAYER_LUNARG_override`
   without `app_keys`; one with `app_keys` applies only to the programs it names), then reads the
   explicit manifests (remove_all_non_valid_override_layers);
2. checks every meta layer in list order: each component must be found (the first layer of that
   name), have an api_version major.minor at least the meta layer's, not be the meta layer itself,
   and be valid if it is a meta layer too; a meta layer that fails is removed from the list
   (verify_all_meta_layers), and an enabled override layer that passes is "present";
3. with the override layer present, removes every layer its `blacklisted_layers` names
   (loader_remove_layers_in_blacklist), then every layer VK_LOADER_LAYERS_DISABLE makes
   unavailable;
4. adds the enabled implicit layers in list order, then the explicit ones the environment asks
   for; a meta layer adds its components (an implicit component only when it is enabled itself; the
   override layer's components are forced on) and is itself added only when every component is
   found (loader_add_implicit_layer, loader_add_meta_layer);
5. builds the chain from the last added layer: the first copy of a name whose library opens is
   inserted (`layers.pick_duplicates`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from vkdoctor.loader.fields import parse_version, version_triple
from vkdoctor.loader.filters import matches
from vkdoctor.loader.layerrecords import OVERRIDE_LAYER, Layer, LayerScan
from vkdoctor.model import Remedy
from vkdoctor.model.record import replace


@dataclass
class _State:
    #: the loader's instance layer list: valid layers, implicit ones first
    listed: list[Layer]
    enable_raw: LayerScan
    override: Layer | None = None
    #: id(layer) -> the replacement record
    changed: dict[int, Layer] = field(default_factory=dict)
    #: layers in the expanded list, in the order added, with the meta layer that added each
    added: list[tuple[Layer, Layer | None]] = field(default_factory=list)
    metas_added: set[int] = field(default_factory=set)


def _find(name: str, listed: list[Layer]) -> Layer | None:
    """loader_find_layer_property: the first layer of that name."""
    return next((x for x in listed if x.name == name), None)


def _major_minor(layer: Layer) -> tuple[int, int]:
    text = (layer.api_version or "").encode("utf-8", "surrogateescape")
    major, minor, _ = version_triple(parse_version(text))
    return major, minor


def _meta_problem(meta: Layer, listed: list[Layer], seen: tuple[str, ...] = ()) -> str | None:
    """verify_meta_layer_component_layers: why the loader removes `meta`, or None."""
    for name in meta.component_layers:
        comp = _find(name, listed)
        if comp is None:
            return f"its component layer {name} is not found"
        if _major_minor(comp) < _major_minor(meta):
            return (
                f"its component layer {name} has api_version {comp.api_version}, older than "
                f"the meta layer's {meta.api_version}"
            )
        if name == meta.name:
            return "it lists itself as a component layer"
        if comp.is_meta:
            if name in seen:
                return f"its component layers form a cycle through {name}"
            inner = _meta_problem(comp, listed, (*seen, meta.name or ""))
            if inner is not None:
                return f"its component meta layer {name} is dropped ({inner})"
    return None


def _available(layer: Layer, scan: LayerScan) -> bool:
    """loader_layer_is_available: VK_LOADER_LAYERS_DISABLE, overridden by _ENABLE."""
    name = layer.name or ""
    if scan.enable.active and matches(name, scan.enable):
        return True
    by_type = scan.disable.explicit if layer.explicit else scan.disable.implicit
    return not (scan.disable.all or by_type or matches(name, scan.disable))


def _drop(state: _State, layer: Layer, why: str) -> None:
    state.changed[id(layer)] = replace(layer, invalid=why, active=False)
    state.listed = [x for x in state.listed if x is not layer]


def global_override(layers: Iterable[Layer]) -> Layer | None:
    """The override layer in force for every program: the first valid implicit
    VK_LAYER_LUNARG_override without app_keys (remove_all_non_valid_override_layers)."""
    return next(
        (
            x
            for x in layers
            if x.name == OVERRIDE_LAYER and x.invalid is None and not x.explicit and not x.app_keys
        ),
        None,
    )


def _choose_override(state: _State) -> None:
    """remove_all_non_valid_override_layers, for a program vkdoctor cannot name: an override
    layer with app_keys is left out; of several global ones the first is kept."""
    for layer in [x for x in state.listed if x.name == OVERRIDE_LAYER and not x.explicit]:
        if layer.app_keys:
            _drop(
                state,
                layer,
                "an override layer for the programs in its app_keys only: "
                + ", ".join(layer.app_keys),
            )
        elif state.override is None:
            state.override = layer
        else:
            _drop(
                state,
                layer,
                f"a second global override layer; the loader uses {state.override.manifest}",
            )


def _verify_metas(state: _State) -> None:
    for layer in list(state.listed):
        if layer.is_meta and any(x is layer for x in state.listed):
            why = _meta_problem(layer, state.listed)
            if why is not None:
                _drop(
                    state,
                    layer,
                    f"meta layer dropped by the loader, with all its components: {why}",
                )


def _enabled(layer: Layer, state: _State) -> bool:
    """loader_implicit_layer_is_enabled, with the override layer's components forced on."""
    override = state.override
    if override is not None and layer.name in override.component_layers:
        return True
    return layer.active


def _add(state: _State, layer: Layer, via: Layer | None) -> None:
    if layer.is_meta:
        _add_meta(state, layer)
    else:
        state.added.append((layer, via))


def _add_meta(state: _State, meta: Layer) -> bool:
    """loader_add_meta_layer: the components, then the meta layer when all are found."""
    found_all = True
    for name in meta.component_layers:
        comp = _find(name, state.listed)
        if comp is None:
            found_all = False
        elif not _available(comp, state.enable_raw):
            continue
        elif not comp.explicit:
            if _enabled(comp, state):
                _add(state, comp, meta)
        elif comp.is_meta:
            found_all = _add_meta(state, comp) and found_all
        else:
            state.added.append((comp, meta))
    if found_all:
        state.metas_added.add(id(meta))
    return found_all


def _remove_blacklisted(state: _State) -> None:
    override = state.override
    if override is None:
        return
    for layer in list(state.listed):
        if layer is not override and layer.name in override.blacklisted_layers:
            _drop(
                state,
                layer,
                f"blacklisted by the override layer {OVERRIDE_LAYER} in {override.manifest} "
                "(written by vkconfig): the loader does not load it",
            )
            state.changed[id(layer)] = replace(
                state.changed[id(layer)], blacklisted_by=override.manifest
            )


def _through(layer: Layer, meta: Layer) -> Layer:
    """A layer the loader adds because a meta layer lists it."""
    what = "the override layer" if meta.name == OVERRIDE_LAYER else f"meta layer {meta.name}"
    off = meta.fix
    if meta.name == OVERRIDE_LAYER:
        off = Remedy(
            text=f"remove {layer.name} from component_layers in {meta.manifest} "
            "(vkconfig's layer settings), or turn the override layer off: " + meta.fix.shown()
        )
    return replace(
        layer,
        active=True,
        activation=f"on through {what} ({meta.manifest})",
        off=off,
    )


def select(implicit: LayerScan, explicit: LayerScan) -> tuple[LayerScan, LayerScan]:
    """The two scans with each layer's state as the loader's selection leaves it."""
    if implicit.aborted_by is not None:
        return implicit, explicit
    state = _State(
        listed=[x for x in (*implicit.layers, *explicit.layers) if x.invalid is None],
        enable_raw=implicit,
    )
    _choose_override(state)
    _verify_metas(state)
    override = state.override
    if override is None or not any(x is override for x in state.listed) or not override.active:
        state.override = None
    _remove_blacklisted(state)
    state.listed = [x for x in state.listed if _available(x, implicit)]
    for layer in list(state.listed):
        if not layer.explicit and _enabled(layer, state):
            _add(state, layer, None if layer.active else state.override)
    for layer in list(state.listed):
        if layer.explicit and layer.active:
            _add(state, layer, None)
    _settle(state)
    return _rebuilt(implicit, state), _rebuilt(explicit, state)


def _settle(state: _State) -> None:
    """Each layer's record: on through a meta layer, a meta layer added or not."""
    own = {id(x) for x, via in state.added if via is None}
    for layer, via in state.added:
        if via is not None and id(layer) not in own and id(layer) not in state.changed:
            state.changed[id(layer)] = _through(layer, via)
    for layer in state.listed:
        if not layer.is_meta or id(layer) in state.changed:
            continue
        if id(layer) in state.metas_added:
            state.changed[id(layer)] = replace(
                layer, activation=f"{layer.activation}; {_loads(layer, state)}"
            )
        elif layer.active:
            missing = [n for n in layer.component_layers if _find(n, state.listed) is None]
            state.changed[id(layer)] = replace(
                layer,
                active=False,
                activation="not added: its component "
                + ", ".join(missing)
                + " is not available (the other components are still loaded)",
            )


def _loads(meta: Layer, state: _State) -> str:
    """Which components an added meta layer brings in, and which it lists but does not load."""
    added = {x.name for x, _ in state.added} | {
        x.name for x in state.listed if id(x) in state.metas_added
    }
    loads = [n for n in meta.component_layers if n in added]
    idle = [n for n in meta.component_layers if n not in added]
    text = f"loads {', '.join(loads)}" if loads else "loads none of its components"
    if idle:
        text += f" ({', '.join(idle)}: off by themselves or by VK_LOADER_LAYERS_DISABLE)"
    return text


def _rebuilt(scan: LayerScan, state: _State) -> LayerScan:
    files = tuple(
        replace(f, layers=tuple(state.changed.get(id(x), x) for x in f.layers)) for f in scan.files
    )
    return replace(scan, files=files)
