#!/usr/bin/env bash
# Set up .venv (CPython 3.10) if needed, check the code (ruff, import boundaries), then run the test suite
# (GUI tests offscreen) on both cores. Arguments go to pytest, e.g. the quick run: scripts/run-tests.sh -m "not slow and not mpi"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" test
cd "$root"
echo "ruff check (rules: pyproject.toml [tool.ruff])"
"$root/.venv/bin/ruff" check --no-cache .
echo "import boundaries (contracts: pyproject.toml [tool.importlinter])"
"$root/.venv/bin/python" "$root/scripts/lint_imports.py"
# The Xvfb flow (tests/gui/shell/test_xvfb_flow.py) needs Xvfb, xdotool and the libraries of Qt's xcb plugin. CI is
# Debian and root: install what is missing; elsewhere the test skips, naming the packages.
xvfb_packages="xvfb xdotool libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-util1 libxkbcommon-x11-0"
if command -v dpkg-query >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  missing=""
  for package in $xvfb_packages; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
  done
  if [ -n "$missing" ]; then
    echo "installing$missing (for the Xvfb flow test)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
      >/dev/null; } || echo "could not install$missing: the Xvfb flow test will be skipped"
  fi
fi
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
# Both cores (pytest-xdist) unless the caller chose: -n N, --numprocesses, or -p no:xdist for a serial run.
parallel=(-n 2)
for arg in "$@"; do
  case "$arg" in -n*|--numprocesses*|no:xdist) parallel=() ;; esac
done
exec "$root/.venv/bin/python" -m pytest -q "${parallel[@]}" "$@"
