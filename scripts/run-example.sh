#!/usr/bin/env bash
# Set up .venv (CPython 3.10) if needed, then open the desktop console on a copy of the bundled
# digits example. Without a display (or with --headless) it trains the example headless instead,
# printing progress and the final metrics. Results go under ./examples/digits_cnn/results/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" test
example="$root/examples/digits_cnn"
if [ ! -f "$example/project.yaml" ]; then
    "$root/.venv/bin/nnconsole" new "$example" --template digits_cnn
fi
headless=0
if [ "${1:-}" = "--headless" ]; then headless=1; shift; fi
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    echo "nnconsole: no display found; training the example headless (nnconsole train)." >&2
    headless=1
fi
if [ "$headless" = 1 ]; then
    exec "$root/.venv/bin/nnconsole" train "$example/project.yaml" "$@"
fi
# Qt's X11 plugin aborts without a few system libraries: name the one install command first.
"$root/.venv/bin/python" -m nnconsole.app.shell.qt_libraries || exit 1
exec "$root/.venv/bin/nnconsole" gui "$example/project.yaml"
