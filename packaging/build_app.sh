#!/usr/bin/env bash
# Build the one-folder app dist/nnconsole-app/ with PyInstaller (packaging/nnconsole.spec).
#
# PyInstaller runs in its own venv (build/app-venv, reused between builds; the dev .venv is not touched)
# where nnconsole is installed from a clean copy of the sources, not editable, with its dependencies
# from PyPI, so the app holds exactly what the wheel holds plus Python, nnabla, Qt and Open MPI.
# Usage: packaging/build_app.sh [--fresh] [--archive]
#   --fresh    recreate build/app-venv
#   --archive  also pack dist/nnconsole-app-<version>-linux-x86_64.tar.gz (the folder, for download)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root="$packaging_root"
venv="$root/build/app-venv"
work="$root/build/pyinstaller"
distpath="$root/dist"
pyinstaller_spec="pyinstaller>=6.5,<7"

archive=0
for arg in "$@"; do
    case "$arg" in
        --fresh) rm -rf "$venv";;
        --archive) archive=1;;
        *) echo "build_app.sh: unknown argument '$arg' (--fresh, --archive)" >&2; exit 2;;
    esac
done
start=$(date +%s)

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
stage_sources "$stage/src"

want="$(sha1sum "$root/pyproject.toml" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    new_venv "$venv"
fi
if [ "$(cat "$venv/.deps-stamp" 2>/dev/null)" != "$want" ]; then  # first build, or pyproject.toml changed
    log "installing nnconsole's dependencies and PyInstaller into $venv (from PyPI)"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$stage/src" "$pyinstaller_spec" >&2
    echo "$want" > "$venv/.deps-stamp"
fi
log "installing nnconsole from the current sources into the build venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$stage/src" >&2

log "running PyInstaller"
rm -rf "$distpath/nnconsole-app"
# Run outside the source tree so the installed package, not ./engine, is what PyInstaller analyses.
(cd "$stage" && "$venv/bin/python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$distpath" --workpath "$work" "$root/packaging/nnconsole.spec")

app="$distpath/nnconsole-app"
elapsed=$(( $(date +%s) - start ))
log "built $app in ${elapsed}s: $(du -sh "$app" | cut -f1) on disk, $(find "$app" -type f | wc -l) files"
if [ "$archive" = 1 ]; then
    version="$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("nnconsole"))')"
    tarball="$distpath/nnconsole-app-$version-linux-$(uname -m).tar.gz"
    tar -C "$distpath" -czf "$tarball" nnconsole-app
    log "archive $tarball: $(du -h "$tarball" | cut -f1)"
fi
log "smoke test: packaging/smoke_test_app.sh"
