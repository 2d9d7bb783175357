#!/usr/bin/env bash
# Install vkdoctor with the Vulkan loader and lavapipe on Debian/Ubuntu, then run `vkdoctor check`.
# VKDOCTOR_VENV: where the virtual environment goes (default: .venv in the checkout).
set -euo pipefail
venv=${VKDOCTOR_VENV:-}
[ -z "$venv" ] || venv=$(realpath -m -- "$venv")
cd "$(dirname "$0")/.."
venv=${venv:-$PWD/.venv}
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    libvulkan1 mesa-vulkan-drivers vulkan-tools python3-venv >/dev/null
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q .
status=0
"$venv/bin/vkdoctor" check "$@" || status=$?
# after the report, where it does not scroll away
echo "vkdoctor is installed in $venv: run $venv/bin/vkdoctor (or put $venv/bin on PATH)." >&2
exit "$status"
