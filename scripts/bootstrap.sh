#!/usr/bin/env bash
# Create (or refresh) the project's .venv from a CPython 3.10 and install nnconsole into it.
# nnabla 1.39 ships wheels only for CPython 3.8-3.10, so 3.10 is required.
# Usage: scripts/bootstrap.sh [extra]   (extra: test, cuda, dev; default: test)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extra="${1:-test}"
venv="$root/.venv"

# shellcheck source=python310.sh
source "$root/scripts/python310.sh"

venv_ok() {
    [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 10) else 1)' >/dev/null 2>&1
}

NNCONSOLE_TOOLS="${NNCONSOLE_TOOLS:-$root/.nnconsole-python}"
NNCONSOLE_UV=""
[ -x "$NNCONSOLE_TOOLS/uv/bin/uv" ] && NNCONSOLE_UV="$NNCONSOLE_TOOLS/uv/bin/uv"
if ! venv_ok; then
    # A CPython 3.10: $NNCONSOLE_PYTHON, one on this machine, else one uv installs under .nnconsole-python/.
    python310_for_venv || exit 1
    echo "nnconsole: creating .venv from $NNCONSOLE_PY" >&2
    rm -rf "$venv"
    "$NNCONSOLE_PY" -m venv "$venv"
fi

stamp="$venv/.nnconsole-installed-$extra"
want="$(cat "$root/pyproject.toml" | sha1sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "nnconsole: installing into .venv (extra: $extra)" >&2
    log="$venv/install.log"
    : > "$log"
    if [ -n "$NNCONSOLE_UV" ] && ! pip_has_own_index "$venv/bin/python"; then
        # uv is here already (it installed the Python): it installs the same packages several times faster,
        # trusting the system's certificate store as pip on this system does.
        install() { UV_SYSTEM_CERTS=1 "$NNCONSOLE_UV" pip install --python "$venv/bin/python" "$@"; }
    else
        install() { "$venv/bin/python" -m pip install --disable-pip-version-check "$@"; }
        "$venv/bin/python" -m pip install --disable-pip-version-check --upgrade pip >> "$log" 2>&1 ||
            { tail -n 40 "$log" >&2; echo "nnconsole: installation failed; full log: $log" >&2; exit 1; }
    fi
    {
        install -e "$root[$extra]" &&
        # ONNX export uses nnabla's converter; its declared TensorFlow dependencies are not needed.
        install --no-deps nnabla-converter==1.39.0
    } >> "$log" 2>&1 || { tail -n 40 "$log" >&2; echo "nnconsole: installation failed; full log: $log" >&2; exit 1; }
    echo "$want" > "$stamp"
fi
