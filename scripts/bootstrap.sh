#!/usr/bin/env bash
# Create (or refresh) the project's .venv from a CPython 3.10 and install nnconsole into it.
# nnabla 1.39 ships wheels only for CPython 3.8-3.10, so 3.10 is required.
# Usage: scripts/bootstrap.sh [extra]   (extra: test, cuda, dev; default: test)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
extra="${1:-test}"
venv="$root/.venv"

# shellcheck source=find_python.sh
source "$root/scripts/find_python.sh"

venv_ok() {
    [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 10) else 1)' >/dev/null 2>&1
}

if ! venv_ok; then
    if ! py="$(find_python310)"; then
        cat >&2 <<'MSG'
nnconsole needs CPython 3.10 (nnabla 1.39 has wheels only for Python 3.8-3.10) and none was found.
Looked at: $NNCONSOLE_PYTHON, python3.10 on PATH, pyenv versions 3.10.*, /usr/bin/python3.10.
Fix, one of:
  - pyenv install 3.10.13            (then run this command again)
  - sudo apt-get install python3.10 python3.10-venv   (Ubuntu 22.04 has it)
  - export NNCONSOLE_PYTHON=/path/to/python3.10
MSG
        exit 1
    fi
    echo "nnconsole: creating .venv from $py" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
fi

stamp="$venv/.nnconsole-installed-$extra"
want="$(cat "$root/pyproject.toml" | sha1sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "nnconsole: installing into .venv (extra: $extra)" >&2
    log="$venv/install.log"
    {
        "$venv/bin/python" -m pip install --disable-pip-version-check --upgrade pip &&
        "$venv/bin/python" -m pip install --disable-pip-version-check -e "$root[$extra]" &&
        # ONNX export uses nnabla's converter; its declared TensorFlow dependencies are not needed.
        "$venv/bin/python" -m pip install --disable-pip-version-check --no-deps nnabla-converter==1.39.0
    } > "$log" 2>&1 || { tail -n 40 "$log" >&2; echo "nnconsole: installation failed; full log: $log" >&2; exit 1; }
    echo "$want" > "$stamp"
fi
