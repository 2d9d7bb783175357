#!/usr/bin/env python3
"""Generate vkdoctor/data/gpu_chips.json: which chip a PCI device ID is, for the GPUs whose
firmware is named by chip or by IP version, not by the kernel's ID lists (gpu_ids.json).

- NVIDIA, Turing and newer: PCI device ID -> chip (pci.ids names each device "GA102 [...]"),
  and for each chip the GSP firmware nouveau requests (nvidia/<chip>/gsp/gsp-<version>.bin),
  from nouveau's NVKM_GSP_FIRMWARE_* declarations (drivers/gpu/drm/nouveau/nvkm/subdev/gsp/).
- AMD chips amdgpu finds by IP discovery with a GC (graphics) IP of 11 or newer (RDNA 3 and
  later): PCI device ID -> chip (pci.ids "Navi 31 [...]", "Phoenix1"), the chip's IP versions
  from the kernel's own tables (Documentation/gpu/amdgpu/{dgpu,apu}-asic-info-table.csv), and
  the firmware files the kernel declares for each IP version (MODULE_FIRMWARE in
  drivers/gpu/drm/amd/). amdgpu names a discovery chip's firmware <ip>_<major>_<minor>_<rev>
  (amdgpu_ucode_ip_version_decode() in amdgpu_ucode.c: gc, sdma, psp, smu, vcn, ...).

Both sources come from Debian's archive, checked end to end: the suite's InRelease is verified
with gpgv against debian-archive-keyring, the Packages index against InRelease's SHA256, each
.deb against the index's SHA256. Run from the repository root:

    scripts/gen_gpu_chips.py            newest pci.ids and linux-source-X.Y of Debian sid;
                                        writes vkdoctor/data/gpu_chips.json
    scripts/gen_gpu_chips.py --pinned   the exact .debs the committed file names (by pool path
                                        and SHA256, no index needed); with --check, exit 1 when
                                        the output differs from the committed file

Downloads are cached under --cache (default ~/.cache/vkdoctor-tests/gpu-chips). Needs
Python 3, dpkg-deb and tar, and for the newest sources gpgv and debian-archive-keyring.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import lzma
import os
import re
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
OUT = Path("vkdoctor/data/gpu_chips.json")
CACHE = Path(os.environ.get("VKDOCTOR_TEST_CACHE", Path.home() / ".cache" / "vkdoctor-tests"))
#: the kernel files read, inside linux-source-X.Y/
NOUVEAU_GSP = "drivers/gpu/drm/nouveau/nvkm/subdev/gsp/"
AMD_DRIVER = "drivers/gpu/drm/amd/"
ASIC_TABLES = (
    "Documentation/gpu/amdgpu/dgpu-asic-info-table.csv",
    "Documentation/gpu/amdgpu/apu-asic-info-table.csv",
)
#: NVIDIA chip families nouveau runs on GSP-RM: Turing (tu), Ampere (ga), Ada (ad), Hopper (gh),
#: Blackwell (gb); the generator checks each chip nouveau declares firmware for is one of them
GSP_FAMILIES = ("tu", "ga", "ad", "gh", "gb")
#: pci.ids names an NVIDIA device after its chip: "GA107GLM [...]", "GB203M / GN22 [...]"
NVIDIA_CHIP = re.compile(r"([A-Z]{2}\d{2}[0-9B])(?:M|GL|GLM|S)?\b")
#: the requests every IP-discovery chip makes with AMDGPU_UCODE_REQUIRED on its way up, by IP
#: block: (the kernel file, the name it requests after the version prefix). The generator finds
#: each request in the file, and which of sos/toc each PSP version loads in the psp_v*_0*.c
#: init_microcode switches.
REQUESTS = {
    "gc": (("gfx_v{major}_0.c", "_pfp"), ("gfx_v{major}_0.c", "_me"), ("gfx_v{major}_0.c", "_mec")),
    "sdma": (("amdgpu_sdma.c", ""),),
    "psp": (("amdgpu_psp.c", "_{psp}"),),
}
#: words that name a function of a GPU's chip (or of a chipset) that is not the GPU itself, in
#: a pci.ids name outside its "[...]": pci.ids gives no class per device, and the
#: chain names only a display-class device (sysfs gives its class), so this only keeps the
#: table small
NOT_A_GPU = re.compile(
    r"\b(audio|usb|ucsi|smbus|ethernet|ide|sata|pci|bridge|host|lpc|isa|memory controller|"
    r"coprocessor|co-processor|serial|raid|network|switch|controller|port|modem|firewire|"
    r"nvswitch|sound|apm|timer|dma|pmu|i2c|iommu|sensor)\b",
    re.I,
)
#: GFX IP major -> the family AMD's graphics architecture names (Mesa src/amd/common/amd_family.h)
GFX_FAMILY = {11: "RDNA 3 (GFX11)", 12: "RDNA 4 (GFX12)"}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        data: bytes = r.read()
    return data


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_deb(pool_path: str, sha256: str, cache: Path) -> Path:
    """The .deb at `pool_path` of the mirror, its SHA256 checked, downloaded once into `cache`."""
    dest = cache / Path(pool_path).name
    if dest.is_file() and _sha256(dest.read_bytes()) == sha256:
        return dest
    try:
        data = _get(f"{MIRROR}/{pool_path}")
    except urllib.error.HTTPError as exc:
        raise SystemExit(
            f"{MIRROR}/{pool_path}: {exc.code} {exc.reason}. Debian drops a package's old "
            "version from the pool once a newer one replaces it: run scripts/gen_gpu_chips.py "
            "(without --pinned) to take the newest and commit vkdoctor/data/gpu_chips.json"
        ) from None
    if _sha256(data) != sha256:
        raise SystemExit(f"{pool_path}: SHA256 {_sha256(data)} is not the expected {sha256}")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return dest


def newest(suite: str, cache: Path) -> dict[str, dict[str, str]]:
    """pci.ids and the newest linux-source-X.Y of `suite` (main, all): pool path, version,
    SHA256, from a Packages index checked against the suite's InRelease, itself checked with
    gpgv."""
    cache.mkdir(parents=True, exist_ok=True)
    inrelease = cache / f"{suite}-InRelease"
    inrelease.write_bytes(_get(f"{MIRROR}/dists/{suite}/InRelease"))
    signed = subprocess.run(
        ["gpgv", "--keyring", KEYRING, "--output", "-", str(inrelease)],
        capture_output=True,
        check=False,
    )
    if signed.returncode != 0:
        raise SystemExit(f"gpgv refused {suite}'s InRelease: {signed.stderr.decode()}")
    index = "main/binary-all/Packages.xz"
    want = next(
        (
            line.split()[0]
            for line in signed.stdout.decode().split("SHA256:", 1)[1].splitlines()
            if line.split()[2:3] == [index]
        ),
        None,
    )
    packages = _get(f"{MIRROR}/dists/{suite}/{index}")
    if want is None or _sha256(packages) != want:
        raise SystemExit(f"{suite}/{index} does not match the SHA256 InRelease gives")
    found: dict[str, dict[str, str]] = {}
    for stanza in lzma.decompress(packages).decode().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        name = fields.get("Package", "")
        if name == "pci.ids" or re.fullmatch(r"linux-source-\d+\.\d+", name):
            key = "pci.ids" if name == "pci.ids" else "linux-source"
            entry = {
                "package": name,
                "version": fields["Version"],
                "pool": fields["Filename"],
                "sha256": fields["SHA256"],
                "suite": suite,
            }
            if key not in found or _newer(entry, found[key]):
                found[key] = entry
    return found


def _newer(a: dict[str, str], b: dict[str, str]) -> bool:
    """Whether Debian version a is newer than b (dpkg --compare-versions decides)."""
    if a["package"] != b["package"]:
        major = [tuple(int(x) for x in e["package"].rsplit("-", 1)[1].split(".")) for e in (a, b)]
        return major[0] > major[1]
    return (
        subprocess.run(
            ["dpkg", "--compare-versions", a["version"], "gt", b["version"]], check=False
        ).returncode
        == 0
    )


def pci_ids_text(deb: Path) -> str:
    """usr/share/misc/pci.ids out of the pci.ids .deb."""
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True)
    out = subprocess.run(
        ["tar", "-xO", "./usr/share/misc/pci.ids"],
        input=tar.stdout,
        capture_output=True,
        check=True,
    )
    return out.stdout.decode("utf-8", errors="replace")


def kernel_files(deb: Path, cache: Path) -> Path:
    """The few kernel files read, extracted once out of linux-source's tarball into `cache`."""
    dest = cache / (deb.name + ".read")
    if (dest / "done").is_file():
        return dest
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True)
    inner = re.search(rb"usr/src/(linux-source-[\d.]+)\.tar\.xz", tar.stdout[: 1 << 20])
    if inner is None:
        raise SystemExit(f"{deb.name}: no usr/src/linux-source-*.tar.xz")
    top = inner.group(1).decode()
    member = f"./usr/src/{top}.tar.xz"
    xz = subprocess.run(["tar", "-xO", member], input=tar.stdout, capture_output=True, check=True)
    dest.mkdir(parents=True, exist_ok=True)
    wanted = (NOUVEAU_GSP, AMD_DRIVER, *ASIC_TABLES)
    with tarfile.open(fileobj=io.BytesIO(xz.stdout), mode="r|xz") as t:
        for m in t:
            rel = m.name.removeprefix(f"{top}/")
            # amdgpu's .h files are mostly register headers (hundreds of MB): only .c is read
            kept = rel.endswith((".c", ".csv")) or rel == NOUVEAU_GSP + "priv.h"
            if m.isfile() and rel.startswith(wanted) and kept:
                f = t.extractfile(m)
                if f is not None:
                    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                    (dest / rel).write_bytes(f.read())
    (dest / "done").write_text(top + "\n")
    return dest


def parse_pci_ids(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """The database's version line and vendor -> {device id: name} for AMD and NVIDIA."""
    version = next((m[1] for m in re.finditer(r"^#\s*Version:\s*(\S+)", text, re.M)), "unknown")
    out: dict[str, dict[str, str]] = {"1002": {}, "10de": {}}
    vendor = None
    for line in text.splitlines():
        if re.match(r"[0-9a-f]{4}  ", line):
            vendor = line[:4]
        elif vendor in out and (m := re.match(r"\t([0-9a-f]{4})  (.+)", line)):
            out[vendor][m[1]] = m[2].strip()
    return version, out


def gpu_names(names: dict[str, str]) -> dict[str, str]:
    """device ID -> pci.ids name, for the devices whose name is not that of another function
    (HDMI audio, USB, bridges, a chipset's parts); a name that is not printable text is left
    out (pci.ids is data: it never reaches a terminal unescaped, and the table keeps none)."""
    return {
        dev: name
        for dev, name in sorted(names.items())
        if not NOT_A_GPU.search(re.sub(r"\[[^]]*\]", "", name)) and name.isprintable()
    }


def nouveau_gsp(tree: Path) -> dict[str, dict[str, Any]]:
    """chip -> the GSP firmware versions and files nouveau declares for it."""
    gsp = tree / NOUVEAU_GSP
    priv = (gsp / "priv.h").read_text()
    macros = {
        m[1]: re.findall(r'"nvidia/"#chip"/gsp/([\w-]+)-"#vers"\.bin"', m[2])
        for m in re.finditer(
            r"#define NVKM_GSP_FIRMWARE_(\w+)\(chip,vers\)(.*?)(?:\n\n)", priv, re.S
        )
    }
    chips: dict[str, dict[str, Any]] = {}
    for source in sorted(gsp.glob("*.c")):
        for kind, chip, version in re.findall(
            r"^NVKM_GSP_FIRMWARE_(\w+)\((\w+),\s*([\d.]+)\);", source.read_text(), re.M
        ):
            if chip[:2] not in GSP_FAMILIES:
                raise SystemExit(f"nouveau declares GSP firmware for {chip}, not a known family")
            entry = chips.setdefault(chip, {"versions": [], "files": []})
            entry["versions"].append(version)
            entry["files"] += [f"{name}-{version}.bin" for name in macros[kind]]
    if not chips or not all(macros.values()):
        raise SystemExit(f"no NVKM_GSP_FIRMWARE declarations read in {gsp}")
    return {c: {k: sorted(set(v)) for k, v in e.items()} for c, e in sorted(chips.items())}


def nvidia_ids(names: dict[str, str], gsp: dict[str, Any]) -> dict[str, str]:
    """NVIDIA device ID -> chip, for the chips of the families nouveau runs on GSP-RM (the
    GPU's other functions, its audio controller, carry the chip's name too)."""
    chips = {}
    for dev, name in names.items():
        m = NVIDIA_CHIP.match(name)
        if m and m[1][:2].lower() in GSP_FAMILIES:
            chips[dev] = m[1].lower()
    missing = sorted(set(gsp) - set(chips.values()))
    if missing:
        raise SystemExit(f"pci.ids names no device of nouveau's GSP chips {missing}")
    return dict(sorted(chips.items()))


def amd_firmware(tree: Path) -> dict[str, list[str]]:
    """IP version prefix ("gc_11_0_0") -> the amdgpu/ files the kernel declares for it."""
    defines: dict[str, str] = {}
    declared: set[str] = set()
    sources = sorted((tree / AMD_DRIVER).rglob("*.c"))
    for source in sources:
        text = source.read_text(errors="replace")
        defines.update(re.findall(r'#define\s+(FIRMWARE_\w+)\s+"amdgpu/([^"]+)"', text))
    for source in sources:
        for arg in re.findall(
            r"MODULE_FIRMWARE\(\s*([^)]+?)\s*\)", source.read_text(errors="replace")
        ):
            name = (
                arg.strip('"').removeprefix("amdgpu/") if arg.startswith('"') else defines.get(arg)
            )
            if name:
                declared.add(name)
    out: dict[str, list[str]] = {}
    for name in sorted(declared):
        m = re.match(r"([a-z]+_\d+_\d+_\d+)", name)
        if m:
            out.setdefault(m[1], []).append(name)
    return out


def _versions(cell: str) -> list[str]:
    """Version cells: "11.0.1 / 11.0.4" -> ["11_0_1", "11_0_4"]; "DCN 3.2.0" -> ["3_2_0"]."""
    return [v.replace(".", "_") for v in re.findall(r"\d+\.\d+\.\d+", cell)]


def asic_rows(tree: Path) -> list[dict[str, Any]]:
    """The kernel's tables' rows with a GC of 11 or newer: product, code reference, and each
    variant's IP versions (a row with "A / B" cells has two variants, in that order)."""
    rows = []
    for table in ASIC_TABLES:
        with (tree / table).open(newline="") as f:
            for raw in list(csv.reader(f, skipinitialspace=True))[1:]:
                cells = [c.strip() for c in raw]
                gc = _versions(cells[3])
                if not gc or int(gc[0].split("_")[0]) < 11:
                    continue
                ips = {"gc": gc, "sdma": _versions(cells[5]), "psp": _versions(cells[6])}
                count = len(gc)
                if any(len(v) not in (1, count) for v in ips.values()):
                    raise SystemExit(f"{table}: cannot pair the versions of {cells[0]!r}")
                variants = [
                    {k: v[i] if len(v) == count else v[0] for k, v in ips.items()}
                    for i in range(count)
                ]
                rows.append(
                    {"product": cells[0], "code": cells[1], "variants": variants, "table": table}
                )
    return rows


def _chip_key(name: str) -> str:
    """pci.ids' "Navi 31 [...]", "Phoenix1", "HawkPoint2", "Strix Halo [...]" and the kernel
    tables' "Hawk Point", "Strix Point" as one key: navi31, phoenix, hawk, strixhalo."""
    base = name.split("[", 1)[0].strip().lower()
    base = re.sub(r"\s+(usb|hdmi.*|gl-xl)$", "", base)
    if base.startswith("navi"):
        return base.replace(" ", "")
    return re.sub(r"\d+$", "", base.replace(" ", "")).removesuffix("point")


def _models(name: str) -> set[str]:
    """The Radeon RX model numbers in a pci.ids name's brackets, not a PRO W/V/R card's."""
    brackets = name.partition("[")[2]
    if not re.search(r"\bRX\b", brackets):
        return set()
    return set(re.findall(r"(?<![WVR\d])(\d{4})(?!\d)", brackets))


def amd_chips(
    names: dict[str, str],
    rows: list[dict[str, Any]],
    fw: dict[str, list[str]],
    loads: dict[str, str],
) -> dict[str, Any]:
    """AMD device ID -> chip for the chips of the kernel's tables with GC 11 and newer, and each
    chip's variants with the firmware it needs first."""
    by_key: dict[str, list[str]] = {}
    for dev, name in names.items():
        by_key.setdefault(_chip_key(name), []).append(dev)
    chips: dict[str, Any] = {}
    unnamed: list[str] = []
    for row in rows:
        if row["code"]:
            key = _chip_key(row["code"])
        else:
            first = re.search(r"\d{4}", row["product"])
            keys = {
                k
                for k, devs in by_key.items()
                for d in devs
                if first and first[0] in _models(names[d])
            }
            if len(keys) != 1:
                raise SystemExit(f"{row['product']!r} matches chips {sorted(keys)} in pci.ids")
            key = keys.pop()
        if key not in by_key:
            # a chip the kernel documents and pci.ids has no device of (it may share IDs)
            unnamed.append(f"{row['product']} ({row['code']})")
            continue
        chip = chips.setdefault(
            re.sub(r"\W", "", row["code"].lower()) if row["code"] else key,
            {
                "name": row["code"]
                or min((names[d].split("[")[0].strip() for d in by_key[key]), key=len),
                "match": key,
                "family": GFX_FAMILY.get(int(row["variants"][0]["gc"].split("_")[0]), "GFX11+"),
                "products": [],
                "variants": [],
            },
        )
        chip["products"].append(row["product"])
        for v in row["variants"]:
            variant = {**v, "required": _required(v, fw, loads)}
            if variant not in chip["variants"]:
                chip["variants"].append(variant)
    ids = {d: c for c, e in chips.items() for d in by_key[e.pop("match")]}
    return {
        "ids": dict(sorted(ids.items())),
        "chips": dict(sorted(chips.items())),
        "not_in_pci_ids": unnamed,
    }


def psp_loads(tree: Path) -> dict[str, str]:
    """MP0 (PSP) version -> "sos" or "toc": what the psp_v1x_0*.c init_microcode switches
    load for it (discrete chips boot their PSP from a SOS image, APUs from a TOC)."""
    out: dict[str, str] = {}
    for source in sorted((tree / AMD_DRIVER / "amdgpu").glob("psp_v1*_0*.c")):
        body = re.search(r"static int psp_v\w+_init_microcode\(.*?\n}\n", source.read_text(), re.S)
        for group in re.split(r"\bbreak;", body[0] if body else ""):
            kinds = set(re.findall(r"psp_init_(sos|toc)_microcode", group))
            if len(kinds) == 1:
                kind = kinds.pop()
                for v in re.findall(r"IP_VERSION\((\d+), (\d+), (\d+)\)", group):
                    out["_".join(v)] = kind
    return out


def check_requests(tree: Path, majors: set[int]) -> None:
    """Each request REQUESTS names is in the kernel source, made with AMDGPU_UCODE_REQUIRED."""
    for requests in REQUESTS.values():
        for file, suffix in requests:
            for major in majors if "{major}" in file else {0}:
                for kind in ("sos", "toc") if "{psp}" in suffix else ("",):
                    name = suffix.format(psp=kind)
                    path = tree / AMD_DRIVER / "amdgpu" / file.format(major=major)
                    pattern = r"AMDGPU_UCODE_REQUIRED,\s*\"amdgpu/%s" + re.escape(name) + r'\.bin"'
                    if not re.search(pattern, path.read_text()):
                        raise SystemExit(f"{path.name}: no required request of %s{name}.bin")


def _required(
    variant: dict[str, str], fw: dict[str, list[str]], loads: dict[str, str]
) -> list[str]:
    """The files REQUESTS name for a variant's IP versions, each one the kernel declares."""
    out = []
    for block, requests in REQUESTS.items():
        prefix = f"{block}_{variant[block]}"
        for _, suffix in requests:
            if "{psp}" in suffix and variant["psp"] not in loads:
                raise SystemExit(f"no psp_v*_0*.c init_microcode loads PSP {variant['psp']}")
            name = prefix + suffix.format(psp=loads.get(variant["psp"], "")) + ".bin"
            if name not in fw.get(prefix, []):
                raise SystemExit(f"the kernel declares no amdgpu/{name}: {fw.get(prefix)}")
            out.append(name)
    return out


def generate(
    pci_deb: Path, linux_deb: Path, sources: dict[str, dict[str, str]], cache: Path
) -> dict[str, Any]:
    version, names = parse_pci_ids(pci_ids_text(pci_deb))
    tree = kernel_files(linux_deb, cache)
    gsp = nouveau_gsp(tree)
    fw = amd_firmware(tree)
    rows = asic_rows(tree)
    check_requests(tree, {int(v["gc"].split("_")[0]) for r in rows for v in r["variants"]})
    amd = amd_chips(names["1002"], rows, fw, psp_loads(tree))
    used = {
        f"{b}_{v[b]}"
        for c in amd["chips"].values()
        for v in c["variants"]
        for b in ("gc", "sdma", "psp")
    }
    linux = sources["linux-source"]
    return {
        "about": "Which chip a PCI device ID is, for GPUs whose firmware is named by chip (NVIDIA, "
        "Turing and newer, nouveau's GSP firmware) or by IP version (AMD chips amdgpu finds by "
        "IP discovery, GC 11 and newer). Generated by scripts/gen_gpu_chips.py; do not edit.",
        "sources": {
            "pci.ids": {**sources["pci.ids"], "database": version},
            "linux": {
                **linux,
                "files": [
                    f"{NOUVEAU_GSP}*.c (NVKM_GSP_FIRMWARE_*), priv.h",
                    f"{AMD_DRIVER} (MODULE_FIRMWARE; amdgpu_ucode.c names IP firmware "
                    "<ip>_<major>_<minor>_<rev>)",
                    *ASIC_TABLES,
                ],
            },
        },
        "amd_required_rule": "A variant's required files are those amdgpu requests with "
        "AMDGPU_UCODE_REQUIRED whatever the board: GC <gc>_pfp, _me, _mec (gfx_v11_0.c, "
        "gfx_v12_0.c), SDMA <sdma>.bin (amdgpu_sdma.c), PSP <psp>_sos.bin or <psp>_toc.bin as "
        "the psp_v*_0*.c init_microcode switch loads for that version (amdgpu_psp.c). Not "
        "judged: the files the kernel picks by board or feature (rlc and its _1/_kicker "
        "variants, a kicker board's _sos_kicker, imu, mes, ta, smu, vcn, dmcub).",
        "nvidia": {"chips": nvidia_ids(names["10de"], gsp), "nouveau_gsp": gsp},
        "amd": {**amd, "firmware": {k: fw[k] for k in sorted(used)}},
        "listed": {"0x1002": sorted(names["1002"]), "0x10de": sorted(names["10de"])},
        "names_rule": "pci.ids' names of NVIDIA's devices, less those whose name outside its "
        '[...] names another function (audio, USB, bridge, controller, port ...): "GH100 [H100 '
        "SXM5 80GB]\" is the chip, then the product. AMD's GPUs are named by their family "
        "(gpu_ids.json), and their names would add 38 KB.",
        "names": {"0x10de": gpu_names(names["10de"])},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pinned", action="store_true", help="the .debs the committed file names")
    parser.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    parser.add_argument("--suite", default="sid")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache", type=Path, default=CACHE / "gpu-chips")
    args = parser.parse_args(argv)
    if args.pinned:
        committed = json.loads(args.out.read_text())["sources"]
        sources = {
            "pci.ids": {k: v for k, v in committed["pci.ids"].items() if k != "database"},
            "linux-source": {k: v for k, v in committed["linux"].items() if k != "files"},
        }
    else:
        sources = newest(args.suite, args.cache)
    debs = {k: fetch_deb(s["pool"], s["sha256"], args.cache) for k, s in sources.items()}
    doc = generate(debs["pci.ids"], debs["linux-source"], sources, args.cache)
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    if args.check:
        if args.out.read_text() != text:
            print(f"{args.out} differs from what the sources give", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
