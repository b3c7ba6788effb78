#!/usr/bin/env bash
# Install (or remove) nnconsole's desktop entry, icons, MIME type and AppStream metadata for one user,
# under ${XDG_DATA_HOME:-~/.local/share}. No root needed; nothing outside that folder is touched.
#
# Usage: packaging/linux/install_desktop.sh [--exec COMMAND] [--prefix DIR] [--uninstall]
#   --exec COMMAND  what the menu entry runs (default: nnconsole-gui from PATH, else the venv's or the
#                   frozen app's launcher, e.g. --exec /opt/nnconsole-app/nnconsole-app)
#   --prefix DIR    data folder to install into (default: ${XDG_DATA_HOME:-$HOME/.local/share})
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
app_id="io.github.nnconsole.NNConsole"
prefix="${XDG_DATA_HOME:-$HOME/.local/share}"
exec_cmd=""
uninstall=0
while [ $# -gt 0 ]; do
    case "$1" in
        --exec) exec_cmd="$2"; shift 2;;
        --prefix) prefix="$2"; shift 2;;
        --uninstall) uninstall=1; shift;;
        -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}"; exit 0;;
        *) echo "install_desktop.sh: unknown argument '$1' (see --help)" >&2; exit 2;;
    esac
done

targets=(
    "applications/$app_id.desktop"
    "metainfo/$app_id.metainfo.xml"
    "icons/hicolor/scalable/apps/$app_id.svg"
    "icons/hicolor/128x128/apps/$app_id.png"
    "mime/packages/$app_id.xml"
)

refresh() {
    command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$prefix/applications" || true
    command -v update-mime-database >/dev/null 2>&1 && update-mime-database "$prefix/mime" >/dev/null 2>&1 || true
    command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$prefix/icons/hicolor" || true
}

if [ "$uninstall" = 1 ]; then
    for t in "${targets[@]}"; do rm -f "$prefix/$t"; done
    refresh
    echo "removed nnconsole's desktop files from $prefix"
    exit 0
fi

if [ -z "$exec_cmd" ]; then
    if command -v nnconsole-gui >/dev/null 2>&1; then
        exec_cmd="nnconsole-gui"
    elif [ -x "$root/.venv/bin/nnconsole-gui" ]; then
        exec_cmd="$root/.venv/bin/nnconsole-gui"
    elif [ -x "$root/dist/nnconsole-app/nnconsole-app" ]; then
        exec_cmd="$root/dist/nnconsole-app/nnconsole-app"
    else
        echo "install_desktop.sh: no nnconsole-gui on PATH, in .venv or dist/nnconsole-app; pass --exec COMMAND" >&2
        exit 1
    fi
fi
case "$exec_cmd" in
    *[[:space:]]*) echo "install_desktop.sh: --exec path must not contain spaces: $exec_cmd" >&2; exit 2;;
esac

install -d "$prefix/applications" "$prefix/metainfo" "$prefix/icons/hicolor/scalable/apps" \
    "$prefix/icons/hicolor/128x128/apps" "$prefix/mime/packages"
sed -e "s|^Exec=nnconsole-gui|Exec=$exec_cmd|" -e "s|^TryExec=nnconsole-gui|TryExec=$exec_cmd|" \
    "$here/$app_id.desktop" > "$prefix/applications/$app_id.desktop"
install -m 644 "$here/$app_id.metainfo.xml" "$prefix/metainfo/$app_id.metainfo.xml"
install -m 644 "$here/$app_id.svg" "$prefix/icons/hicolor/scalable/apps/$app_id.svg"
install -m 644 "$here/$app_id.png" "$prefix/icons/hicolor/128x128/apps/$app_id.png"
install -m 644 "$here/$app_id.mime.xml" "$prefix/mime/packages/$app_id.xml"
refresh
echo "installed nnconsole's menu entry (Exec=$exec_cmd %f), icons, MIME type and metainfo into $prefix"
