# Shared helpers for the packaging scripts (sourced, not run).
# shellcheck shell=bash

packaging_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# A CPython 3.10 interpreter, searched like scripts/bootstrap.sh does (nnabla 1.39 has wheels for 3.8-3.10).
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
    echo "no CPython 3.10 found (looked at \$NNCONSOLE_PYTHON, pyenv 3.10.*, python3.10 on PATH);" \
         "install one or export NNCONSOLE_PYTHON=/path/to/python3.10" >&2
    return 1
}

# new_venv DIR: a fresh CPython 3.10 venv with an up-to-date pip.
new_venv() {
    local py
    py="$(find_python310)"
    rm -rf "$1"
    "$py" -m venv "$1"
    "$1/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
}

# stage_sources DEST: copy the files git would ship (tracked + untracked-not-ignored, minus deleted ones),
# so build outputs, caches, results and the dev venv never reach an artefact.
stage_sources() {
    local dest="$1"
    mkdir -p "$dest"
    if git -C "$packaging_root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$packaging_root" && git ls-files -z --cached --others --exclude-standard) |
            (cd "$packaging_root" && while IFS= read -r -d '' f; do
                [ -f "$f" ] && printf '%s\0' "$f"
            done) |
            (cd "$packaging_root" && xargs -0 cp --parents -t "$dest")
    else
        (cd "$packaging_root" && tar --exclude=.git --exclude=.venv --exclude=build --exclude=dist \
            --exclude=__pycache__ --exclude=.nnconsole-cache --exclude=results --exclude='*.egg-info' \
            --exclude=.pytest_cache --exclude=.hypothesis -cf - .) | (cd "$dest" && tar -xf -)
    fi
}
