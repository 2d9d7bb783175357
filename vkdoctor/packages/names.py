"""Human names for drivers and libraries, from their file names (never hard-coded versions)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from vkdoctor.model.sonames import family

#: Vulkan driver library stem -> the name people use for it
DRIVER_NAMES = {
    "libvulkan_lvp": "lavapipe",
    "libvulkan_radeon": "RADV",
    "libvulkan_intel": "ANV",
    "libvulkan_intel_hasvk": "HASVK",
    "libvulkan_nouveau": "NVK",
    "libvulkan_virtio": "Venus",
    "libvulkan_freedreno": "Turnip",
    "libvulkan_panfrost": "PanVK",
    "libvulkan_broadcom": "V3DV",
    "libvulkan_powervr_mesa": "PowerVR",
    "libvulkan_asahi": "Honeykrisp",
    "libvulkan_dzn": "Dozen",
    "libvulkan_gfxstream": "gfxstream",
    "libGLX_nvidia": "NVIDIA",
    "libnvidia-vulkan-producer": "NVIDIA",
    "amdvlk64": "AMDVLK",
    "amdvlk32": "AMDVLK",
}


def stem(soname_or_path: str) -> str:
    """`/usr/lib/libLLVM.so.23.1` -> `libLLVM`; `libLLVM-15.so.1` and `libLLVM-17git.so` ->
    `libLLVM` (vkdoctor.model.sonames.family; a name without ".so" is its own stem)."""
    name = PurePosixPath(soname_or_path).name
    return family(name) or name


def numbers(soname_or_path: str) -> tuple[int, ...]:
    """The version numbers in a library name: `libLLVM.so.23.1` -> (23, 1), `libLLVM-15.so.1` -> (15, 1)."""
    name = PurePosixPath(soname_or_path).name
    rest = name[len(stem(name)) :]
    return tuple(int(n) for n in re.findall(r"[0-9]+", rest))


def driver_name(path: str) -> str:
    """`/usr/lib/libvulkan_lvp.so` -> `lavapipe`; unknown drivers keep their file name."""
    name = PurePosixPath(path).name
    key = name.split(".so", 1)[0]
    return DRIVER_NAMES.get(key, name)


def library_label(soname: str) -> str:
    """What a sentence calls the library: `libLLVM.so.23.1` -> `LLVM`, `libdrm_amdgpu.so.1` -> `drm_amdgpu`."""
    s = stem(soname)
    return s[3:] if s.startswith("lib") and len(s) > 3 else s
