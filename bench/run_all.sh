#!/usr/bin/env bash
# Run every benchmark and print its tables (not part of the test suite).
#   bash bench/run_all.sh            # full runs (about an hour on 2 cores: imagenet_rows alone ~20 minutes)
#   bash bench/run_all.sh --quick    # smoke run (about 2 minutes)
# BENCH_NICE=-10 bash bench/run_all.sh   runs them at a higher priority (root only) on a shared machine.
# NNCONSOLE_BENCH_PYTHON=/other/checkout/.venv/bin/python runs the measured processes under another installation
# (before/after figures); bench/common.py says how.
set -u
cd "$(dirname "$0")/.."
PY=.venv/bin/python
NICE=${BENCH_NICE:-0}
status=0
for bench in engine_overhead allreduce scaling startup gui decode_speed data_wait cold_epoch imagenet_rows on_the_fly; do
    echo "================ bench/$bench.py $* ================"
    # No `|| true` after the pipeline: it would reset PIPESTATUS to the `true`'s status (grep exits 1
    # when it prints nothing, which without `set -e` stops nothing).
    nice -n "$NICE" "$PY" "bench/$bench.py" "$@" 2>&1 | grep -v -e '\[nnabla\]\[INFO\]' -e 'propagateSizeHints'
    rc=${PIPESTATUS[0]}
    [ "$rc" -gt "$status" ] && status=$rc
done
echo "(exit status: 0 = every goal met, 1 = a goal missed, 2 = a benchmark failed)"
exit "$status"
