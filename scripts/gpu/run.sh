#!/usr/bin/env bash
# Run on the GPU machine from the repository root (prepare.sh first, here): records vkdoctor's
# verdicts on the machine as it comes (no Vulkan loader), with Debian's loader alone, with the
# loader and GLVND, plus `check --cpu` and `vkdoctor bench`, and the benchmark against vulkaninfo,
# into one archive, $OUT/gpu-out.tgz (default ./gpu-out), beside a copy of summary.txt.
# Nothing is installed with a package manager: wheels go to /tmp/site, .debs are unpacked into /.
# ldconfig is not run, so the machine's dynamic-linker cache stays as it came.
set -u
dest=${OUT:-./gpu-out}
mkdir -p "$dest"
out=$(mktemp -d)
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
# vulkaninfo for the benchmark: vulkan-tools' files, and of the libraries it links only those the
# machine has no copy of
dpkg -x .gl/extra/vulkan-tools_*.deb /
for _ in 1 2 3 4 5 6 7 8 9; do
    missing=$(ldd /usr/bin/vulkaninfo | awk '/not found/ {print $1; exit}')
    [ -n "$missing" ] || break
    for f in .gl/extra/lib*.deb; do
        dpkg-deb -c "$f" | grep -q "/$missing" && { dpkg -x "$f" /; echo "unpacked $f for $missing" >> "$out/summary.txt"; }
    done
done
# `check --no-probe` against `vulkaninfo --summary`, cold and warm, with LD_LIBRARY_PATH as it
# came (vkdoctor starts again without it, so no child is forked at launch)
python3 benchmarks/check_vs_vulkaninfo.py -n 9 > "$out/bench-ld-path.txt" 2>&1
echo "bench-ld-path: exit $?" | tee -a "$out/summary.txt"
# the dynamic-linker cache rebuilt (ld.so.conf.d lists /usr/local/nvidia/lib64) and
# LD_LIBRARY_PATH unset: vkdoctor does not start again, and the load test's first child is the
# one forked at launch (vkdoctor.speed.zygote), now on the NVIDIA driver
ldconfig
(
    unset LD_LIBRARY_PATH
    step cache-check check --no-probe --json "$out/cache-check.json"
    # the same again: the waiting child is handed the request the run above began with
    step cache-again check --no-probe --json "$out/cache-again.json"
    step cache-full check --json "$out/cache-full.json"
    # a passing `check --no-probe` kept, then replayed (vkdoctor.speed.replay): a replayed run never
    # imports the command line interface, which -X importtime shows
    for n in 1 2 3; do
        python3 -X importtime -m vkdoctor check --no-probe > "$out/replay-$n.txt" 2> "$out/replay-$n.imports"
        echo "replay-$n: exit $?, $(grep -c 'import time' "$out/replay-$n.imports") imports, cli $(grep -c '| vkdoctor.cli$' "$out/replay-$n.imports")" | tee -a "$out/summary.txt"
    done
    python3 benchmarks/check_vs_vulkaninfo.py -n 9 > "$out/bench-cache.txt" 2>&1
    echo "bench-cache: exit $?" | tee -a "$out/summary.txt"
    # what each speed piece saves here (docs/performance.md, "Each piece pays its way")
    python3 benchmarks/pieces.py -n 9 --json "$out/pieces.json" > "$out/pieces.txt" 2>&1
    echo "pieces: exit $?" | tee -a "$out/summary.txt"
)
cat "$out/summary.txt"
# the device tool brings back at most 8 files: one archive holds them all
tar -C "$out" -czf "$dest/gpu-out.tgz" . && cp "$out/summary.txt" "$dest/"
