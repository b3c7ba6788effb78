#!/usr/bin/env bash
# Install the built wheel and sdist, each into its own clean CPython 3.10 venv (dependencies from PyPI),
# and use nnconsole from there: --help, templates (4), new from the installed template data, train.
#
# Everything runs from a temporary folder outside the source tree, so nothing is imported from ./engine.
# Usage: packaging/check_dist.sh [DIST_DIR] [wheel|sdist|both]   (default: dist/ both)
# Env:   CHECK_MPI=1 also trains with --gpus 2 under the venv's mpiexec (Open MPI from PyPI).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root="$packaging_root"
dist="$(cd "${1:-$root/dist}" && pwd)"
which="${2:-both}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export QT_QPA_PLATFORM=offscreen OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset PYTHONPATH

fail() { echo "check_dist: FAILED: $*" >&2; exit 1; }

check_one() {  # check_one KIND ARTEFACT
    local kind="$1" artefact="$2" venv="$tmp/$1-venv" work="$tmp/$1-work" t0 t1
    log "$kind: clean venv, pip install $(basename "$artefact")"
    t0=$(date +%s)
    new_venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$artefact" >&2 ||
        fail "$kind: pip install $artefact"
    t1=$(date +%s)
    log "$kind: installed in $((t1 - t0))s ($(du -sh "$venv" | cut -f1))"
    mkdir -p "$work"
    cd "$work"
    local cli="$venv/bin/nnconsole"
    [ -x "$venv/bin/nnconsole-gui" ] || fail "$kind: the nnconsole-gui launcher was not installed"
    "$cli" --help > help.txt || fail "$kind: nnconsole --help"
    grep -q "train" help.txt || fail "$kind: nnconsole --help does not list train"
    "$cli" templates > templates.txt || fail "$kind: nnconsole templates"
    cat templates.txt >&2
    [ "$(grep -c . templates.txt)" -eq 4 ] || fail "$kind: expected 4 templates, got: $(cat templates.txt)"
    for t in diabetes_regression digits_cnn iris_mlp wine_mlp; do
        grep -q "^$t " templates.txt || fail "$kind: template $t not listed"
    done
    "$cli" new "$work/x" --template digits_cnn >&2 || fail "$kind: nnconsole new"
    local pngs
    pngs=$(find "$work/x/data/images" -name '*.png' | wc -l)
    [ "$pngs" -eq 1797 ] || fail "$kind: new project has $pngs PNGs, expected 1797"
    local site
    site="$("$venv/bin/python" -c 'import nnconsole.templates as t, os; print(os.path.dirname(t.__file__))')"
    case "$site" in "$venv"/*) ;; *) fail "$kind: nnconsole.templates imported from $site, not the venv";; esac
    t0=$(date +%s)
    "$cli" train "$work/x/project.yaml" --epochs 1 > train.log 2>&1 || { cat train.log >&2; fail "$kind: train"; }
    t1=$(date +%s)
    grep -E "^(finished|results):" train.log >&2
    grep -q "^finished:" train.log || { cat train.log >&2; fail "$kind: train did not finish"; }
    log "$kind: train --epochs 1 (digits_cnn, 1 process) took $((t1 - t0))s"
    if [ "${CHECK_MPI:-0}" = "1" ]; then
        t0=$(date +%s)
        "$cli" train "$work/x/project.yaml" --epochs 1 --gpus 2 > train2.log 2>&1 ||
            { cat train2.log >&2; fail "$kind: train --gpus 2"; }
        t1=$(date +%s)
        grep -q "^finished:" train2.log || { cat train2.log >&2; fail "$kind: 2-worker train did not finish"; }
        log "$kind: train --epochs 1 --gpus 2 (mpiexec from the venv) took $((t1 - t0))s"
    fi
    cd "$tmp"
    rm -rf "$venv" "$work"
    log "$kind: OK"
}

wheel=$(ls "$dist"/nnconsole-[0-9]*.whl 2>/dev/null | head -1)
sdist=$(ls "$dist"/nnconsole-[0-9]*.tar.gz 2>/dev/null | head -1)
case "$which" in
    wheel|both) [ -n "$wheel" ] || fail "no nnconsole wheel in $dist (run packaging/build_dist.sh)";;
esac
case "$which" in
    sdist|both) [ -n "$sdist" ] || fail "no nnconsole sdist in $dist (run packaging/build_dist.sh)";;
esac
[ "$which" = wheel ] || [ "$which" = both ] || [ "$which" = sdist ] || fail "second argument: wheel, sdist or both"
[ "$which" = sdist ] || check_one wheel "$wheel"
[ "$which" = wheel ] || check_one sdist "$sdist"
log "check_dist: all checks passed"
