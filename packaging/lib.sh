# Shared helpers for the packaging scripts (sourced, not run).
# shellcheck shell=bash

packaging_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# shellcheck source=../scripts/find_python.sh
source "$packaging_root/scripts/find_python.sh"

# python310_or_explain: find_python310, or say how to get one.
python310_or_explain() {
    find_python310 && return 0
    echo "no CPython 3.10 found (looked at \$NNCONSOLE_PYTHON, pyenv 3.10.*, python3.10 on PATH);" \
         "install one or export NNCONSOLE_PYTHON=/path/to/python3.10" >&2
    return 1
}

# new_venv DIR: a fresh CPython 3.10 venv with an up-to-date pip.
new_venv() {
    local py
    py="$(python310_or_explain)"
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
