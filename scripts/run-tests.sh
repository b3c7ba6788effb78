#!/usr/bin/env bash
# Set up .venv (CPython 3.10) if needed, then run the whole test suite (GUI tests offscreen).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" test
cd "$root"
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
exec "$root/.venv/bin/python" -m pytest -q "$@"
