"""The records of the layer scan: one layer entry, one manifest, one scan."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from vkdoctor.loader.filters import Filter
from vkdoctor.loader.search import SearchPlan
from vkdoctor.loader.version import LoaderVersion
from vkdoctor.model import Remedy
from vkdoctor.model.record import field, record
from vkdoctor.model.shellwords import export_command

#: the meta layer vkconfig writes; its blacklisted_layers, override_paths and app_keys count
OVERRIDE_LAYER = "VK_LAYER_LUNARG_override"


@record(frozen=True, kw_only=True)
class Layer:
    """One layer entry of a manifest, and whether it ends up in every instance."""

    manifest: str
    origin: str
    name: str | None
    #: None when the entry is valid; otherwise why the loader drops it
    invalid: str | None = None
    type: str | None = None
    library_path: str | None = None
    #: "absolute", "relative" or "bare"
    library_rule: str | None = None
    #: what dlopen gets
    library: str | None = None
    #: for a bare name: where the standard directories hold it, if anywhere
    library_found: str | None = None
    #: "ok", "missing", "wrong-class", ... (inspect_library), "no-entry-point" (exports neither
    #: vkNegotiateLoaderLayerInterfaceVersion nor vkGetInstanceProcAddr), or "unknown" for a bare
    #: name not found
    library_state: str | None = None
    component_layers: tuple[str, ...] = ()
    library_arch: str | None = None
    disable_env: str | None = None
    disable_value: str | None = None
    enable_env: str | None = None
    enable_value: str | None = None
    active: bool = False
    #: why active or not, one line
    activation: str = ""
    #: an explicit layer (explicit_layer.d), in every instance only when a variable asks
    explicit: bool = False
    api_version: str | None = None
    #: the override layer's (VK_LAYER_LUNARG_override) lists; empty for any other layer
    blacklisted_layers: tuple[str, ...] = ()
    override_paths: tuple[str, ...] = ()
    app_keys: tuple[str, ...] = ()
    #: when a meta layer (or the override layer) is what puts this layer in, how to turn it off
    off: Remedy | None = None
    #: the manifest of the override layer whose blacklisted_layers keeps this layer out
    blacklisted_by: str | None = None

    @property
    def is_meta(self) -> bool:
        """A meta layer: a list of component layers and no library of its own."""
        return self.invalid is None and self.library_path is None

    @property
    def fix(self) -> Remedy:
        """How to keep this layer out of every instance (see `_own_fix`)."""
        return self.off if self.off is not None else self._own_fix

    @property
    def _own_fix(self) -> Remedy:
        """How to keep this layer out of every instance, by the loader's precedence: an
        implicit layer's disable_environment wins over everything; for an explicit layer,
        VK_LOADER_LAYERS_ENABLE wins over VK_LOADER_LAYERS_DISABLE."""
        own = export_command(self.disable_env or "", self.disable_value or "1")
        if own and not self.explicit:
            return Remedy(
                commands=(own,),
                text=f"(any value, even empty, turns {self.name} off)",
            )
        if self.activation.startswith("forced on by VK_LOADER_LAYERS_ENABLE"):
            return Remedy(
                commands=("unset VK_LOADER_LAYERS_ENABLE",),
                text=f", or narrow it so that it no longer matches {self.name} "
                "(VK_LOADER_LAYERS_DISABLE cannot turn off a layer it forces on)",
            )
        if self.activation.startswith("enabled by VK_INSTANCE_LAYERS="):
            return without_instance_layer(self.activation.partition("=")[2], self.name or "")
        return Remedy(commands=(f"export VK_LOADER_LAYERS_DISABLE={shlex.quote(self.name or '')}",))

    @property
    def remedy(self) -> str:
        """`fix` as a sentence quotes it."""
        return self.fix.shown()


@record(frozen=True, kw_only=True)
class LayerFile:
    manifest: str
    origin: str
    outcome: str
    reason: str
    file_format_version: str | None = None
    layers: tuple[Layer, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)


@record(frozen=True, kw_only=True)
class LayerScan:
    plan: SearchPlan
    files: tuple[LayerFile, ...]
    loader: LoaderVersion
    enable: Filter
    disable: Filter
    #: the manifest that makes vkCreateInstance fail (JSON error on old loaders), crash or hang
    aborted_by: LayerFile | None = None

    @property
    def layers(self) -> tuple[Layer, ...]:
        return tuple(layer for f in self.files for layer in f.layers)

    @property
    def active(self) -> tuple[Layer, ...]:
        """Active layers in the order the loader inserts them (see `pick_duplicates`)."""
        first_wins = self.loader.first_duplicate_wins and not any(x.explicit for x in self.layers)
        return pick_duplicates(
            (x for x in self.layers if x.active and x.invalid is None and not x.is_meta),
            first_wins=first_wins,
        )

    @property
    def active_meta(self) -> tuple[Layer, ...]:
        """Meta layers the loader adds (their components are in `active`)."""
        return tuple(x for x in self.layers if x.active and x.is_meta)


#: library states that dlopen refuses for sure; "unknown" (a bare name vkdoctor cannot place) may load
_UNLOADABLE = frozenset(
    {
        "missing",
        "not-elf",
        "wrong-class",
        "wrong-machine",
        "unreadable",
        "directory",
        "no-entry-point",
    }
)


def may_load(layer: Layer) -> bool:
    """Whether dlopen can open the layer's library (a meta layer has none and is not dlopened)."""
    return layer.library is None or layer.library_state not in _UNLOADABLE


def pick_duplicates(layers: Iterable[Layer], *, first_wins: bool = False) -> tuple[Layer, ...]:
    """One copy per name, in list order. As loader 1.3.239's loader_create_instance_chain picks:
    it walks the enabled copies from the last one and skips a name already inserted, and a copy
    whose library does not open is skipped too, so the last copy that loads wins and an earlier
    copy stands in for a later one whose library is missing; when no copy loads, the last one
    stands for the name (its library fails to load). With `first_wins` (implicit layers on
    loaders 1.3.247 and later, whose loader_add_implicit_layer skips a name already listed) the
    first copy is the only one, whether its library loads or not."""
    listed = list(layers)
    by_name: dict[str | None, list[Layer]] = {}
    for layer in listed:
        by_name.setdefault(layer.name, []).append(layer)
    chosen = {
        id(
            copies[0]
            if first_wins
            else next((x for x in reversed(copies) if may_load(x)), copies[-1])
        )
        for copies in by_name.values()
    }
    return tuple(x for x in listed if id(x) in chosen)


def without_instance_layer(value: str, name: str) -> Remedy:
    """The command that takes `name` out of VK_INSTANCE_LAYERS=`value` (its other layers kept,
    in their order), with the words that say so."""
    rest = [n for n in value.split(":") if n and n != name]
    command = (
        f"export VK_INSTANCE_LAYERS={shlex.quote(':'.join(rest))}"
        if rest
        else "unset VK_INSTANCE_LAYERS"
    )
    return Remedy(commands=(command,), text=f"(takes {name} out of VK_INSTANCE_LAYERS)")
