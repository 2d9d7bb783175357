#!/usr/bin/env bash
# Run on the GPU machine from the repository root (prepare.sh first, here): records vkdoctor's
# verdicts on the machine as it comes (no Vulkan loader), with Debian's loader alone, with the
# loader and GLVND, plus `check --cpu` and `vkdoctor bench`, into $OUT (default ./gpu-out).
# Nothing is installed with a package manager: wheels go to /tmp/site, .debs are unpacked into /.
# ldconfig is not run, so the machine's dynamic-linker cache stays as it came.
set -u
out=${OUT:-./gpu-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
step() {  # step NAME ARGS...: one vkdoctor run, text and JSON kept, exit status recorded
    local name=$1; shift
    python3 -m vkdoctor "$@" > "$out/$name.txt" 2> "$out/$name.err"
    echo "$name: exit $?" | tee -a "$out/summary.txt"
}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version; } > "$out/summary.txt" 2>&1
step bare check --json "$out/bare.json"
dpkg -x .gl/libvulkan1_*.deb /
step loader-only check --no-probe --json "$out/loader-only.json"
for f in .gl/*.deb; do dpkg -x "$f" /; done
step loaded check --json "$out/loaded.json"
step loaded-drivers drivers
step loaded-cpu check --cpu --select VKR --json "$out/loaded-cpu.json"
step loaded-gpu check --gpu --json "$out/loaded-gpu.json"
step probe-gpu run-probe --gpu --json "$out/probe-gpu.json"
step capabilities run-probe --gpu --capabilities --json "$out/capabilities.json"
# the cache as it came, and the same check without LD_LIBRARY_PATH: what a CI step that clears
# the environment gets
{ echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}"; ldconfig -p | grep -i nvidia; } > "$out/ldcache.txt" 2>&1
(unset LD_LIBRARY_PATH; step no-ld-path check --no-probe --select VKL,VKT --json "$out/no-ld-path.json")
step bench bench --json "$out/bench.json"
cat "$out/summary.txt"
# the device tool brings back at most 8 files: one archive holds them all
tar -C "$out" -czf /tmp/gpu-out.tgz . && mv /tmp/gpu-out.tgz "$out/"
