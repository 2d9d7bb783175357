#!/usr/bin/env bash
# Test the lowest dependency versions pyproject.toml allows: every `name>=X` in
# [project.dependencies] is pinned to `name==X` in a throwaway virtual environment, the test extra
# is installed around those pins, and the tests run there (the wheel test excluded: it installs
# the newest versions by design). Usage: scripts/lower-bounds.sh [pytest args]
# PYTHON picks the interpreter (default python3); docs/development.md records what was run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" - "$work/pins.txt" <<'PY'
import re, sys, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
with open(sys.argv[1], "w") as out:
    for dep in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([^,;\s]+)", dep)
        if not m:
            sys.exit(f"lower-bounds: cannot pin {dep!r} (expected name>=version)")
        out.write(f"{m.group(1)}=={m.group(2)}\n")
PY
echo "pins:"; sed 's/^/  /' "$work/pins.txt"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --prefer-binary -c "$work/pins.txt" '.[test]' 2>&1 \
    | { grep -v "^WARNING: Location" || true; }
"$work/venv/bin/python" -m pip freeze | grep -iE "^($(cut -d= -f1 "$work/pins.txt" | paste -sd'|'))=="
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider --ignore=tests/test_wheel.py "$@"
