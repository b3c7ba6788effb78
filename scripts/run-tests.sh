#!/usr/bin/env bash
# Set up .venv (CPython 3.10) if needed, check the code (ruff, import boundaries), then run the test suite
# (GUI tests offscreen). Arguments go to pytest, e.g. the quick run: scripts/run-tests.sh -m "not slow and not mpi"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" test
cd "$root"
echo "ruff check (rules: pyproject.toml [tool.ruff])"
"$root/.venv/bin/ruff" check --no-cache .
echo "import boundaries (contracts: pyproject.toml [tool.importlinter])"
"$root/.venv/bin/python" "$root/scripts/lint_imports.py"
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
exec "$root/.venv/bin/python" -m pytest -q "$@"
