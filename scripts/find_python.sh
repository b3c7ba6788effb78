# Shared by scripts/bootstrap.sh and packaging/lib.sh (sourced, not run).
# shellcheck shell=bash

# find_python310: print a CPython 3.10 interpreter (nnabla 1.39 has wheels only for 3.8-3.10).
# Direct interpreter paths come first: pyenv's shims need PYENV_VERSION to pick 3.10.
find_python310() {
    local candidates=()
    [ -n "${NNCONSOLE_PYTHON:-}" ] && candidates+=("$NNCONSOLE_PYTHON")
    local proot="${PYENV_ROOT:-$HOME/.pyenv}"
    command -v pyenv >/dev/null 2>&1 && proot="$(pyenv root)"
    for d in "$proot"/versions/3.10*/bin/python3.10 /usr/bin/python3.10 /usr/local/bin/python3.10; do
        [ -x "$d" ] && candidates+=("$d")
    done
    command -v python3.10 >/dev/null 2>&1 && candidates+=("$(command -v python3.10)")
    local c
    for c in "${candidates[@]}"; do
        if "$c" -c 'import sys, venv; sys.exit(0 if sys.version_info[:2] == (3, 10) else 1)' >/dev/null 2>&1; then
            echo "$c"; return 0
        fi
    done
    return 1
}
