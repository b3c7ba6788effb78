# A CPython 3.10 for the project's .venv: one the machine has, else one uv installs into a folder the
# project owns. Sourced by scripts/bootstrap.sh (not run).
# shellcheck shell=bash
#
# nnabla 1.39 publishes wheels only for CPython 3.8-3.10 and only as manylinux_2_28 (glibc >= 2.28), while
# today's distributions ship 3.11-3.13. Where no 3.10 exists, uv (a single binary from PyPI) installs a
# python-build-standalone CPython 3.10 into $NNCONSOLE_TOOLS (default: <repo>/.nnconsole-python), never onto
# the user's PATH. uv itself is obtained with the system python3 alone: `python3 -m venv` + pip where they
# work, else scripts/fetch_uv.py (standard library only) fetches and unpacks the uv wheel.
#
# Knobs: NNCONSOLE_PYTHON (an interpreter to use; wins over everything), NNCONSOLE_TOOLS (where uv and the
# installed Python go), NNCONSOLE_PYTHON_DOWNLOADS_JSON (uv's --python-downloads-json-url: a mirror's list of
# CPython archives with their sha256, or a local one; tests use it to stay offline), NNCONSOLE_PYPI_URL (the
# index scripts/fetch_uv.py reads, default https://pypi.org).

# shellcheck source=find_python.sh
source "$(dirname "${BASH_SOURCE[0]}")/find_python.sh"

NNCONSOLE_MIN_GLIBC="2.28"

# glibc_version: the C library's version ("2.36"), or nothing on a non-glibc system (musl).
glibc_version() {
    getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}'
}

# check_glibc: refuse a glibc older than nnabla's wheels need, and a system without glibc.
check_glibc() {
    local have
    have="$(glibc_version)"
    if [ -z "$have" ]; then
        echo "nnconsole: this system has no GNU C library (musl, e.g. Alpine?); nnabla 1.39's wheels are" \
             "manylinux_2_28 and need glibc >= $NNCONSOLE_MIN_GLIBC. Use a glibc distribution" \
             "(Debian 10+, Ubuntu 18.10+, RHEL/Rocky 8+, Fedora 29+) or a container of one." >&2
        return 1
    fi
    if [ "$(printf '%s\n%s\n' "$NNCONSOLE_MIN_GLIBC" "$have" | sort -V | head -n1)" != "$NNCONSOLE_MIN_GLIBC" ]; then
        echo "nnconsole: glibc $have is too old: nnabla 1.39's wheels are manylinux_2_28 and need glibc >=" \
             "$NNCONSOLE_MIN_GLIBC (Debian 10+, Ubuntu 18.10+, RHEL/Rocky 8+, Fedora 29+). Upgrade the" \
             "system or run nnconsole in a container of a newer distribution." >&2
        return 1
    fi
}

# distro_install_hint: what to install for a CPython 3.10 on the distribution /etc/os-release names.
distro_install_hint() {
    local os_release="${NNCONSOLE_OS_RELEASE:-/etc/os-release}" id="" like="" version=""
    if [ -r "$os_release" ]; then
        id="$(. "$os_release" && echo "${ID:-}")"
        like="$(. "$os_release" && echo "${ID_LIKE:-}")"
        version="$(. "$os_release" && echo "${VERSION_ID:-}")"
    fi
    case " $id $like " in
        *" ubuntu "*)
            if [ "$version" = "22.04" ]; then
                echo "sudo apt-get install python3.10 python3.10-venv"
            else
                echo "sudo add-apt-repository ppa:deadsnakes/ppa && sudo apt-get install python3.10 python3.10-venv"
            fi ;;
        *" debian "*)
            echo "pyenv install 3.10.13   (Debian 12 and 13 package no python3.10; pyenv builds it from source)" ;;
        *" fedora "*)
            echo "sudo dnf install python3.10" ;;
        *" rhel "*|*" centos "*|*" rocky "*|*" almalinux "*)
            echo "sudo dnf install python3.10 (EPEL/AppStream where offered), or: pyenv install 3.10.13" ;;
        *" opensuse"*|*" suse "*|*" sles "*)
            echo "sudo zypper install python310" ;;
        *" arch "*|*" manjaro "*)
            echo "yay -S python310   (AUR), or: pyenv install 3.10.13" ;;
        *)
            echo "pyenv install 3.10.13   (https://github.com/pyenv/pyenv)" ;;
    esac
}

# explain_no_python310 WHY: the one message for a machine where no 3.10 exists and none could be fetched.
explain_no_python310() {
    local os_name="this system"
    [ -r "${NNCONSOLE_OS_RELEASE:-/etc/os-release}" ] &&
        os_name="$(. "${NNCONSOLE_OS_RELEASE:-/etc/os-release}" && echo "${PRETTY_NAME:-this system}")"
    cat >&2 <<MSG
nnconsole needs CPython 3.10 (nnabla 1.39 has wheels only for Python 3.8-3.10) and none was found,
and none could be fetched: $1
Looked at: \$NNCONSOLE_PYTHON, python3.10 on PATH, pyenv versions 3.10.*, /usr/bin/python3.10, $NNCONSOLE_TOOLS.
Fix for $os_name, one of:
  - $(distro_install_hint)
  - connect to the internet (or a PyPI mirror) and run this command again: uv installs CPython 3.10 into $NNCONSOLE_TOOLS
  - export NNCONSOLE_PYTHON=/path/to/python3.10
MSG
}

# pip_has_own_index PYTHON: whether pip is set up for another index or local wheels (pip.conf or PIP_*), which
# uv does not read; the bootstrap then installs with pip so a mirror or proxy set up for pip keeps working.
pip_has_own_index() {
    [ -n "${PIP_INDEX_URL:-}${PIP_EXTRA_INDEX_URL:-}${PIP_FIND_LINKS:-}" ] && return 0
    "$1" -m pip config list 2>/dev/null | grep -qE '^[a-z:.]*(index-url|find-links)='
}

# managed_python310: a CPython 3.10 uv installed earlier under $NNCONSOLE_TOOLS.
managed_python310() {
    local p
    for p in "$NNCONSOLE_TOOLS"/pythons/cpython-3.10*/bin/python3.10; do
        if [ -x "$p" ] && "$p" -c 'import sys, venv; sys.exit(0 if sys.version_info[:2] == (3, 10) else 1)' >/dev/null 2>&1; then
            echo "$p"; return 0
        fi
    done
    return 1
}

# obtain_uv: print a uv binary: the one under $NNCONSOLE_TOOLS, else one installed there from PyPI.
obtain_uv() {
    local tools="$NNCONSOLE_TOOLS" sys_py
    if [ -x "$tools/uv/bin/uv" ]; then echo "$tools/uv/bin/uv"; return 0; fi
    sys_py="$(command -v python3 || true)"
    if [ -z "$sys_py" ]; then
        echo "no python3 on PATH to fetch uv with" >&2; return 1
    fi
    mkdir -p "$tools"
    # pip in a throw-away venv, where python3 has venv and ensurepip (Debian needs python3-venv) ...
    if "$sys_py" -m venv "$tools/uv" >/dev/null 2>&1 &&
       "$tools/uv/bin/python" -m pip install --quiet --disable-pip-version-check --retries 2 uv >"$tools/uv-install.log" 2>&1 &&
       [ -x "$tools/uv/bin/uv" ]; then
        echo "$tools/uv/bin/uv"; return 0
    fi
    # ... else the wheel, fetched and unpacked with the standard library alone.
    rm -rf "$tools/uv"
    if "$sys_py" "$(dirname "${BASH_SOURCE[0]}")/fetch_uv.py" "$tools/uv/bin" >>"$tools/uv-install.log" 2>&1; then
        echo "$tools/uv/bin/uv"; return 0
    fi
    echo "uv could not be installed from PyPI (log: $tools/uv-install.log)" >&2
    return 1
}

# python310_for_venv: set NNCONSOLE_PY to the CPython 3.10 to build .venv from, installing one with uv when the
# machine has none; NNCONSOLE_UV to the uv binary when there is one of ours (bootstrap then installs with uv,
# which is several times faster than pip). Call it directly, not in $(...): it sets variables.
python310_for_venv() {
    NNCONSOLE_TOOLS="${NNCONSOLE_TOOLS:-$root/.nnconsole-python}"
    NNCONSOLE_PY=""
    local uv why
    check_glibc || return 1
    if NNCONSOLE_PY="$(find_python310)"; then return 0; fi
    if NNCONSOLE_PY="$(managed_python310)"; then return 0; fi
    echo "nnconsole: no CPython 3.10 on this machine; installing one with uv into $NNCONSOLE_TOOLS" \
         "(python-build-standalone; nothing outside that folder changes)" >&2
    mkdir -p "$NNCONSOLE_TOOLS"
    if ! uv="$(obtain_uv 2>"$NNCONSOLE_TOOLS/why.txt")"; then
        why="$(cat "$NNCONSOLE_TOOLS/why.txt" 2>/dev/null)"
        explain_no_python310 "${why:-uv could not be installed}"; return 1
    fi
    local json_args=()
    [ -n "${NNCONSOLE_PYTHON_DOWNLOADS_JSON:-}" ] &&
        json_args=(--python-downloads-json-url "$NNCONSOLE_PYTHON_DOWNLOADS_JSON")
    if ! UV_SYSTEM_CERTS=1 UV_PYTHON_INSTALL_DIR="$NNCONSOLE_TOOLS/pythons" "$uv" python install 3.10 --no-bin "${json_args[@]}" \
            >"$NNCONSOLE_TOOLS/python-install.log" 2>&1; then
        explain_no_python310 "uv python install 3.10 failed: $(tail -n 3 "$NNCONSOLE_TOOLS/python-install.log" | tr '\n' ' ')"
        return 1
    fi
    if ! NNCONSOLE_PY="$(managed_python310)"; then
        explain_no_python310 "uv reported success but no python3.10 is under $NNCONSOLE_TOOLS/pythons"
        return 1
    fi
    NNCONSOLE_UV="$uv"
}
