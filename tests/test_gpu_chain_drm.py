"""vkdoctor/data/drm_vulkan.json: the Mesa Vulkan driver of a GPU known by its DRM kernel driver
(SoC GPUs, virtio-gpu). Every row names the Mesa probe it comes from, which the test reads in the
Mesa release the table names (Debian's orig tarball, SHA256 checked, cached under
~/.cache/vkdoctor-tests/gpu-chips), and the code holds no driver of its own beside the table."""

from __future__ import annotations

import ast
import json
import re
import sys
import tarfile

from conftest import REPO

from vkdoctor.checks.gpu import ARCH_VULKAN, VULKAN_LIBRARIES
from vkdoctor.machine.gpuchain import _drm_identity, drm_vulkan, tables

TABLE = REPO / "vkdoctor/data/drm_vulkan.json"
#: the Vulkan drivers that serve PCI GPUs by vendor, not by a DRM driver of this table
BY_VENDOR = {"NVIDIA", "NVK", "dzn"}


def _rows() -> dict[str, dict]:
    rows: dict[str, dict] = json.loads(TABLE.read_text())["drivers"]
    return rows


def test_every_row_names_the_mesa_probe_it_comes_from() -> None:
    doc = json.loads(TABLE.read_text())
    mesa = doc["mesa"]
    # a Mesa release, as Debian ships its tarball, by checksum
    assert mesa["version"] == "25.0.7" and mesa["source"]["pool"].endswith("25.0.7.orig.tar.xz")
    assert len(mesa["source"]["sha256"]) == 64 and len(mesa["older"]["sha256"]) == 64
    assert mesa["first_conformant"].startswith("Not established")
    rows = _rows()
    assert set(rows) == {
        "v3d", "msm", "panfrost", "panthor", "asahi", "powervr", "virtio_gpu", "lima", "etnaviv"
    }  # fmt: skip
    for driver, row in rows.items():
        assert row["gpu"] and row["probe"], driver
        assert row["mesa_file"].startswith("src/"), driver
        if row["vulkan"] is None:
            assert row["library"] is None and "no Vulkan driver" in row["probe"], driver
            assert row["conformance"] is None and row["line"] is None, driver
        else:
            assert row["mesa_file"].split("/")[2] == "vulkan" and row["line"] > 0, driver
            assert row["library"].startswith("libvulkan_"), driver
            # what the driver reports, in the release read and in the older one
            assert set(row["conformance"]) == {"25.0.7", "22.3.6"}, driver
    # a probe that matches the DRM driver by name quotes that name
    for driver in ("v3d", "msm", "panfrost", "panthor", "asahi", "powervr"):
        assert f'"{driver}"' in rows[driver]["probe"], driver
    # PanVK is conformant on Mali v10 alone: wgpu hides it on the others
    assert "0.0.0.0 on every other" in rows["panfrost"]["conformance"]["25.0.7"]


def test_the_chain_reads_the_table_and_nothing_else() -> None:
    rows = _rows()
    assert drm_vulkan() == {d: (r["gpu"], r["vulkan"]) for d, r in rows.items()}
    assert _drm_identity("lima")["vulkan"] is None
    assert _drm_identity("v3d")["family"] == "Broadcom VideoCore V3D"
    assert _drm_identity("vc4") == {
        "family": None, "vulkan": None, "conformant": None, "claimed_by": ("vc4",)
    }  # fmt: skip
    # no DRM driver of the table is written into the code that reads it
    for module in ("vkdoctor/machine/gpuchain.py", "vkdoctor/checks/gpu.py"):
        constants = {
            n.value
            for n in ast.walk(ast.parse((REPO / module).read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        assert not constants & set(rows), module


def test_every_vulkan_driver_the_checks_name_is_in_a_table() -> None:
    by_id = {
        row["vulkan"]
        for key in ("amd_chips", "intel_platforms")
        for row in tables()[key].values()
        if row.get("vulkan")
    }
    by_drm = {r["vulkan"]: r["library"] for r in _rows().values() if r["vulkan"]}
    assert set(VULKAN_LIBRARIES) == by_id | set(by_drm) | BY_VENDOR
    assert set(ARCH_VULKAN) <= set(VULKAN_LIBRARIES)
    for vulkan, library in by_drm.items():
        assert VULKAN_LIBRARIES[vulkan][0] == library, vulkan


def _mesa_files(names: set[str]) -> tuple[dict[str, list[str]], set[str]]:
    """The lines of `names` (paths under src/) in the Mesa tarball the table names, and every
    file of its Vulkan drivers (src/*/vulkan/) that mentions lima or etnaviv."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_gpu_chips
    finally:
        sys.path.remove(str(REPO / "scripts"))
    source = json.loads(TABLE.read_text())["mesa"]["source"]
    tarball = gen_gpu_chips.fetch_deb(
        source["pool"], source["sha256"], gen_gpu_chips.CACHE / "gpu-chips"
    )
    lines: dict[str, list[str]] = {}
    others: set[str] = set()
    with tarfile.open(tarball, mode="r|xz") as tar:
        for member in tar:
            rel = member.name.split("/", 1)[-1]
            if not member.isfile() or not (rel in names or re.match(r"src/\w+/vulkan/", rel)):
                continue
            f = tar.extractfile(member)
            text = f.read().decode("utf-8", errors="replace") if f else ""
            if rel in names:
                lines[rel] = text.splitlines()
            if re.search(r'"(lima|etnaviv)"', text):
                others.add(rel)
    return lines, others


def test_each_probe_is_in_mesa_where_the_row_says() -> None:
    rows = _rows()
    served = {d: r for d, r in rows.items() if r["vulkan"]}
    lines, others = _mesa_files({r["mesa_file"] for r in served.values()})
    for driver, row in served.items():
        line = lines[row["mesa_file"]][row["line"] - 1]
        wanted = "VIRGL_RENDERER_CAPSET_VENUS" if driver == "virtio_gpu" else f'"{driver}"'
        assert wanted in line, (driver, line)
    # no Vulkan driver of this Mesa opens a lima or etnaviv node
    assert not others, others
