#!/usr/bin/env bash
# Run on the GPU machine from the repository root (prepare.sh first, here): VKE009's verdict on
# wgpu's adapter variables beside what wgpu-py's request_adapter really does with them, on a
# discrete GPU (lavapipe shows only the CPU adapter type). Writes $OUT/wgpu-env.tsv: variable,
# value, what wgpu-py picked (backend and summary, or the error), VKE009's severity and title.
set -u
out=${OUT:-./gpu-out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
for f in .gl/*.deb; do dpkg -x "$f" /; done
pick='import wgpu
try:
    a = wgpu.gpu.request_adapter_sync()
    print(a.info["backend_type"], "|", a.summary)
except Exception as e:
    print("error |", type(e).__name__, " ".join(str(e).split()))'
verdict='import json, sys
d = json.load(sys.stdin)
(f,) = [f for f in d["findings"] if f["code"] == "VKE009"]
print(f["severity"], "|", f["title"])'
printf 'variable\tvalue\twgpu-py\tVKE009\n' > "$out/wgpu-env.tsv"
while IFS='=' read -r var value; do
    real=$(env "$var=$value" python3 -c "$pick" 2>/dev/null | tail -1)
    said=$(env "$var=$value" python3 -m vkdoctor check --no-probe --select VKE009,VKT001 --json - \
        2>/dev/null | python3 -c "$verdict")
    printf '%s\t%s\t%s\t%s\n' "$var" "$value" "$real" "$said" >> "$out/wgpu-env.tsv"
done <<'VALUES'
WGPUPY_WGPU_ADAPTER_NAME=H200
WGPUPY_WGPU_ADAPTER_NAME=h200
WGPUPY_WGPU_ADAPTER_NAME=(DiscreteGPU) via Vulkan
WGPUPY_WGPU_ADAPTER_NAME=via OpenGL
WGPU_BACKEND_TYPE=Vulkan
WGPU_BACKEND_TYPE=OpenGL
WGPU_BACKEND_TYPE=D3D12
WGPU_ADAPTER_NAME=h200
VALUES
cat "$out/wgpu-env.tsv"
