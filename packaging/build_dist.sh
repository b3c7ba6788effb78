#!/usr/bin/env bash
# Build the nnconsole wheel and sdist into dist/ (or OUT_DIR) and check what they contain.
#
# The build runs from a clean copy of the sources (what git would ship: no caches, results or build
# leftovers) with `python -m build` from a throwaway CPython 3.10 venv; the wheel is built from the
# sdist, which proves the sdist is complete. packaging/inspect_dist.py then checks the contents.
# Usage: packaging/build_dist.sh [OUT_DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root="$packaging_root"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
start=$(date +%s)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
stage_sources "$tmp/src"
log "building from a clean copy of the sources ($(find "$tmp/src" -type f | wc -l) files)"
new_venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "build>=1" >&2
rm -f "$out"/nnconsole-[0-9]*.whl "$out"/nnconsole-[0-9]*.tar.gz
"$tmp/venv/bin/python" -m build --outdir "$out" "$tmp/src" > "$tmp/build.log" 2>&1 || {
    cat "$tmp/build.log" >&2; echo "build failed (log above)" >&2; exit 1; }
"$tmp/venv/bin/python" "$root/packaging/inspect_dist.py" "$out" "$tmp/src"
log "built $(cd "$out" && ls nnconsole-[0-9]*.whl nnconsole-[0-9]*.tar.gz | tr '\n' ' ')in $(( $(date +%s) - start ))s"
