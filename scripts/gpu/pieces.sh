#!/usr/bin/env bash
# Run on the GPU machine from the repository root (prepare.sh first, here): only what
# benchmarks/pieces.py needs (the wheels, Debian's loader and GLVND, vulkaninfo), then the
# benchmark of each speed piece and the GPU chain, into $OUT (default ./gpu-out): pieces.json,
# pieces.txt, chain.txt. A short run.sh for a small device budget.
set -u
dest=${OUT:-./gpu-out}
mkdir -p "$dest"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
for f in .gl/*.deb .gl/extra/vulkan-tools_*.deb; do dpkg -x "$f" /; done
for _ in 1 2 3 4 5 6 7 8 9; do
    missing=$(ldd /usr/bin/vulkaninfo | awk '/not found/ {print $1; exit}')
    [ -n "$missing" ] || break
    for f in .gl/extra/lib*.deb; do
        dpkg-deb -c "$f" | grep -q "/$missing" && dpkg -x "$f" /
    done
done
ldconfig  # ld.so.conf.d lists the NVIDIA libraries: no LD_LIBRARY_PATH needed
unset LD_LIBRARY_PATH
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; } > "$dest/pieces.txt" 2>&1
python3 benchmarks/pieces.py -n "${ROUNDS:-7}" --json "$dest/pieces.json" >> "$dest/pieces.txt" 2>&1
echo "pieces: exit $?" >> "$dest/pieces.txt"
COLUMNS=80 python3 -m vkdoctor check --gpu --select VKG001,VKR001 > "$dest/chain.txt" 2>&1
echo "check: exit $?" >> "$dest/chain.txt"
