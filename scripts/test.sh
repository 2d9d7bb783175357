#!/usr/bin/env bash
# The test command: a virtual environment with vkdoctor and its test extras, lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VKDOCTOR_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -e '.[test]'
lint=()
for d in vkdoctor probes tests benchmarks scripts; do [ -e "$d" ] && lint+=("$d"); done
"$venv/bin/ruff" check "${lint[@]}"
"$venv/bin/mypy"
"$venv/bin/python" -m pytest "$@"
