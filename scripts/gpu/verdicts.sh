#!/usr/bin/env bash
# Run on the GPU machine from the repository root (prepare.sh first, here): the records the
# closing notes cite, in one call: `vkdoctor bench` at 80 columns with nvidia-smi sampled during
# it, torch's RMSNorm and copy on the same GPU (benchmarks/torch_rmsnorm.py, where torch is
# installed), the GPU chain (`check --gpu` at 80 columns), and why a passing `check --no-probe`
# is or is not replayed (four runs in a row). Into $OUT (default ./gpu-out): verdicts.txt and
# bench.json. Nothing is installed with a package manager.
set -u
dest=${OUT:-./gpu-out}
mkdir -p "$dest"
log=$dest/verdicts.txt
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 COLUMNS=80
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig  # ld.so.conf.d lists the NVIDIA libraries: no LD_LIBRARY_PATH needed
unset LD_LIBRARY_PATH
section() { printf '\n===== %s (%s)\n' "$1" "$(date -u +%T)" >> "$log"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit --format=csv,noheader; python3 --version; } > "$log" 2>&1
section "bench, nvidia-smi every 0.5 s"
nvidia-smi --query-gpu=timestamp,utilization.gpu,clocks.sm,clocks.mem,clocks_event_reasons.active,power.draw,pcie.link.gen.current,pcie.link.width.current \
    --format=csv,noheader -lms 500 > "$dest/smi.csv" 2>&1 &
smi=$!
python3 -m vkdoctor bench --json "$dest/bench.json" >> "$log" 2>&1
echo "bench: exit $?" >> "$log"
kill "$smi" 2>/dev/null
section "nvidia-smi during the bench (every 4th sample)"
awk 'NR % 4 == 1' "$dest/smi.csv" >> "$log"
section "torch"
python3 benchmarks/torch_rmsnorm.py >> "$log" 2>&1
echo "torch: exit $?" >> "$log"
section "check --gpu"
python3 -m vkdoctor check --gpu >> "$log" 2>&1
echo "check --gpu: exit $?" >> "$log"
section "replay: four check --no-probe in a row"
for n in 1 2 3 4; do
    python3 scripts/gpu/why_not_replayed.py > /dev/null 2>> "$log"
    echo "run $n: exit $?" >> "$log"
done
python3 scripts/gpu/replay_looks.py >> "$log" 2>&1
cat "$log"
