#!/usr/bin/env bash
# Install vkdoctor with the Vulkan loader and lavapipe on Debian/Ubuntu, then run `vkdoctor check`.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    libvulkan1 mesa-vulkan-drivers vulkan-tools python3-venv >/dev/null
venv=${VKDOCTOR_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q .
echo "vkdoctor is installed in $venv: run $venv/bin/vkdoctor (or put $PWD/$venv/bin on PATH)." >&2
exec "$venv/bin/vkdoctor" check "$@"
