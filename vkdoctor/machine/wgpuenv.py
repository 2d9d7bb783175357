"""The variables wgpu reads to choose a backend or an adapter, and what each value does.

wgpu-py (0.32) reads WGPU_BACKEND_TYPE and WGPUPY_WGPU_ADAPTER_NAME in request_adapter. Rust
programs read WGPU_BACKEND, WGPU_ADAPTER_NAME and WGPU_POWER_PREF when they opt in
(`wgpu::Backends::from_env`, `wgpu::util::initialize_adapter_from_env`,
`PowerPreference::from_env`). vkdoctor's own probe enumerates every adapter and ignores all of
them, so a value that steers a user's program away from Vulkan would otherwise go unseen.

Pure analysis over a mapping of variables and the devices the load test saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vkdoctor.model.record import record

#: wgpu-py's enum_str2int["BackendType"] keys (case-sensitive), and what each means on Linux
PY_BACKENDS = {
    "Undefined": "any",
    "Null": "none",
    "WebGPU": "none",
    "D3D11": "none",
    "D3D12": "none",
    "Metal": "none",
    "Vulkan": "vulkan",
    "OpenGL": "gl",
    "OpenGLES": "gl",
}

#: wgpu's Backends::from_comma_list tokens (lower-cased before matching)
RUST_BACKENDS = {
    "vulkan": "vulkan",
    "vk": "vulkan",
    "opengl": "gl",
    "gles": "gl",
    "gl": "gl",
    "dx12": "none",
    "d3d12": "none",
    "metal": "none",
    "mtl": "none",
    "webgpu": "none",
    "noop": "none",
}

#: Vulkan physical device types (probes/loadtest.py) as wgpu names them in an adapter summary
_ADAPTER_TYPES = {
    "discrete-gpu": "DiscreteGPU",
    "integrated-gpu": "IntegratedGPU",
    "cpu": "CPU",
}


@record(frozen=True, kw_only=True)
class BackendChoice:
    """What one backend variable makes wgpu use on Linux."""

    var: str
    value: str
    #: vulkan (only Vulkan), gl (OpenGL, not Vulkan), mixed (Vulkan among others), none (no
    #: backend that exists on Linux), ignored (a value wgpu does not know: it falls back)
    effect: str
    #: the tokens wgpu does not know, as written
    unknown: tuple[str, ...] = ()


def py_backend(env: Mapping[str, str]) -> BackendChoice | None:
    """WGPU_BACKEND_TYPE as wgpu-py reads it: stripped, matched case-sensitively."""
    raw = env.get("WGPU_BACKEND_TYPE")
    if raw is None or not raw.strip():
        return None
    value = raw.strip()
    effect = PY_BACKENDS.get(value)
    if effect is None:
        return BackendChoice(
            var="WGPU_BACKEND_TYPE", value=value, effect="ignored", unknown=(value,)
        )
    if effect == "any":
        return None
    return BackendChoice(var="WGPU_BACKEND_TYPE", value=value, effect=effect)


def rust_backend(env: Mapping[str, str]) -> BackendChoice | None:
    """WGPU_BACKEND as wgpu's Backends::from_env reads it: a comma list, case-insensitive."""
    raw = env.get("WGPU_BACKEND")
    if raw is None:
        return None
    tokens = [t.strip() for t in raw.lower().split(",")]
    effects = {RUST_BACKENDS[t] for t in tokens if t in RUST_BACKENDS}
    # an empty entry (a trailing comma) is skipped like an unknown one, but is no name to show
    unknown = tuple(t for t in tokens if t and t not in RUST_BACKENDS)
    if "vulkan" in effects:
        effect = "vulkan" if effects == {"vulkan"} else "mixed"
    elif "gl" in effects:
        effect = "gl"
    else:
        # unknown tokens are skipped with a log line: what is left is the empty set
        effect = "none"
    return BackendChoice(var="WGPU_BACKEND", value=raw, effect=effect, unknown=unknown)


@record(frozen=True, kw_only=True)
class AdapterName:
    """An adapter name filter, and which of the load test's devices it selects."""

    var: str
    value: str
    #: wgpu-py matches a case-sensitive substring of the adapter's summary; Rust wgpu a
    #: case-insensitive substring of the adapter's name
    matches: tuple[str, ...]
    #: no Vulkan adapter matches, but the summary of an OpenGL adapter on one of these devices
    #: would (wgpu-py also lists OpenGL adapters: "... via OpenGL")
    opengl: bool = False


def summary(name: str, device_type: str, backend: str = "Vulkan") -> str:
    """The adapter summary wgpu-py matches against: "NAME (TYPE) via Vulkan"."""
    return f"{name} ({_ADAPTER_TYPES.get(device_type, 'Unknown')}) via {backend}"


def adapter_names(env: Mapping[str, str], devices: Sequence[tuple[str, str]]) -> list[AdapterName]:
    """The adapter name variables that are set, each with the devices (name, type) it selects."""
    found = []
    py = env.get("WGPUPY_WGPU_ADAPTER_NAME")
    if py:
        matches = tuple(n for n, t in devices if py in summary(n, t))
        found.append(
            AdapterName(
                var="WGPUPY_WGPU_ADAPTER_NAME",
                value=py,
                matches=matches,
                opengl=not matches and any(py in summary(n, t, "OpenGL") for n, t in devices),
            )
        )
    rust = env.get("WGPU_ADAPTER_NAME")
    if rust is not None:
        found.append(
            AdapterName(
                var="WGPU_ADAPTER_NAME",
                value=rust,
                matches=tuple(n for n, _ in devices if rust.lower() in n.lower()),
            )
        )
    return found
