"""What well-known driver libraries drive, for people reading the driver list."""

from __future__ import annotations

from pathlib import PurePosixPath

#: Mesa/NVIDIA library names -> what the driver drives
_KNOWN = {
    "libvulkan_lvp.so": "lavapipe, Mesa's CPU driver (works without a GPU)",
    "libvulkan_intel.so": "Mesa ANV, Intel GPUs (Gen9 and newer); finds no device without one",
    "libvulkan_intel_hasvk.so": "Mesa HASVK, older Intel GPUs (Gen7/Gen8); finds no device without one",
    "libvulkan_radeon.so": "Mesa RADV, AMD GPUs; finds no device without one",
    "libvulkan_nouveau.so": "Mesa NVK, NVIDIA GPUs (nouveau kernel driver)",
    "libGLX_nvidia.so.0": "NVIDIA's proprietary driver",
    "libEGL_nvidia.so.0": "NVIDIA's proprietary driver",
}


def known_driver(library: str | None) -> str | None:
    """A short description of a driver library by its file name, or None."""
    return _KNOWN.get(PurePosixPath(library or "").name)
