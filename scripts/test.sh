#!/usr/bin/env bash
# The test command: the Debian packages the tests use (.ci/apt-packages.txt: the Vulkan loader,
# lavapipe, gcc, patchelf, dpkg-dev, pacman, rpm, ...), a virtual environment with vkdoctor and its
# test extras, then lint, types and the tests. A missing prerequisite fails the run; nothing skips.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
for p in $(cat .ci/apt-packages.txt); do
    [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "installing the Debian packages the tests need:$missing" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $(cat .ci/apt-packages.txt) >/dev/null
fi
venv=${VKDOCTOR_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -e '.[test]'
"$venv/bin/ruff" check vkdoctor probes tests benchmarks scripts
"$venv/bin/mypy"
"$venv/bin/python" -m pytest "$@"
