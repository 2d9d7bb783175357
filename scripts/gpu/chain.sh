#!/usr/bin/env bash
# Run on the GPU machine from the repository root (after prepare.sh here): VKG001, the chain from
# the GPU to its Vulkan device, as `check --gpu` prints it at 80 columns with Debian's loader and
# GLVND unpacked, and what the chain reads (sysfs, /dev, /proc, /lib/firmware) as it is there,
# into $OUT/chain (default ./gpu-out/chain). Nothing is installed with a package manager.
set -u
dest=${OUT:-./gpu-out}/chain
mkdir -p "$dest"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=80
for f in .gl/*.deb; do dpkg -x "$f" /; done
python3 -m vkdoctor check --gpu --select VKG001 > "$dest/chain.txt" 2>&1
echo "exit $?" >> "$dest/chain.txt"
python3 -m vkdoctor check --gpu --json "$dest/check-gpu.json" > "$dest/check-gpu.txt" 2>&1
echo "exit $?" >> "$dest/check-gpu.txt"
{
    for d in /sys/bus/pci/devices/*; do
        case $(cat "$d/class") in 0x03*) ;; *) continue ;; esac
        echo "== $d -> $(readlink "$d")"
        for a in vendor device subsystem_vendor subsystem_device class boot_vga; do
            echo "$a: $(cat "$d/$a" 2>&1)"
        done
        echo "driver: $(readlink "$d/driver" 2>&1)"
        ls -la "$d/drm" 2>&1
        cat "/proc/driver/nvidia/gpus/${d##*/}/information" 2>&1
    done
    echo "== modules"; ls /sys/module | grep -E 'nvidia|nouveau|drm|amdgpu|radeon|i915|xe$'
    echo "nvidia version: $(cat /sys/module/nvidia/version 2>&1)"
    ls /sys/module/nvidia/parameters 2>&1 | head -50
    echo "== /dev"; ls -la /dev/nvidia* /dev/dri 2>&1; getfacl -n /dev/nvidia0 2>&1
    echo "== cmdline: $(cat /proc/cmdline)"; echo "release: $(cat /proc/sys/kernel/osrelease)"
    echo "== firmware"; ls -la /lib/firmware/nvidia 2>&1 | head; ls /lib/firmware/nvidia/*/ 2>&1 | head
    echo "== modprobe"; ls /etc/modprobe.d /lib/modprobe.d /usr/lib/modprobe.d /run/modprobe.d 2>&1
    echo "== user"; id
} > "$dest/layout.txt" 2>&1
