"""Start-up: seconds from ``nnconsole train`` to the first training iteration (1 and 2 workers), and
from starting the GUI to its main window painted.

Training: the real CLI (``python -m nnconsole train``, what ``nnconsole train`` runs) on the digits
CNN with ``log_interval: 1``, so metrics.jsonl gets its first record right after iteration 1. The
file is polled every 2 ms. Milestones, all from the moment the CLI process is spawned:

- run dir: the CLI printed its run directory (Python + engine imports, project load and checks, plan);
- worker up: rank 0 logged its device line (mpiexec + worker interpreter + nnabla import + communicator);
- 1st iteration: the first train record (datasets from the decode cache, graph build, iteration 1).

GUI: a child process does what ``nnconsole gui PROJECT`` does (``nnconsole.app.shell.application``: QApplication,
MainWindow, show, open the project) with QT_QPA_PLATFORM=offscreen and a scratch settings folder, and
reports the time of the main window's first paint event. Runs alternate; medians are reported.
"""
from __future__ import annotations

import datetime
import os
import subprocess
import time

from common import (PYTHON, ROOT, bench_env, digits_project, machine, median, parse_quick, pin_threads,  # noqa: E402
                    run_main, scratch, spread, table)

pin_threads(1)

GUI_DRIVER = r'''
import sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from nnconsole.app.shell.application import create_application
app = create_application()
from nnconsole.app.shell.main_window import MainWindow
window = MainWindow()

class FirstPaint(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Paint:
            print("PAINTED", time.time(), flush=True)
            QTimer.singleShot(0, app.quit)
            obj.removeEventFilter(self)
        return False

spy = FirstPaint()
window.installEventFilter(spy)
window.show()
window.start(sys.argv[1] if len(sys.argv) > 1 else None)
QTimer.singleShot(30000, app.quit)
app.exec()
'''


def _log_time(line: str) -> float:
    stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    return stamp.timestamp()


def train_startup(project: str, workers: int, out: str) -> dict:
    """Milestones (seconds after spawning the CLI) of one run."""
    cmd = [PYTHON, "-m", "nnconsole.engine.cli.main", "train", project, "--gpus", str(workers), "-o", out, "-q",
           "--epochs", "1"]
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=bench_env(),
                            cwd=os.path.dirname(project))
    run_dir, t_dir, t_first = None, None, None
    line = proc.stdout.readline()  # 'run directory: ...' is the first line
    if line.startswith("run directory: "):
        run_dir, t_dir = line.split(": ", 1)[1].strip(), time.time() - t0
    metrics = os.path.join(run_dir, "metrics.jsonl") if run_dir else None
    while run_dir and proc.poll() is None:
        try:
            with open(metrics, "rb") as fh:
                if b'"type":"train"' in fh.readline():
                    t_first = time.time() - t0
                    break
        except OSError:
            pass
        time.sleep(0.002)
    out_text, err_text = proc.communicate(timeout=300)
    t_end = time.time() - t0
    if proc.returncode != 0 or run_dir is None:
        raise RuntimeError(f"training failed ({proc.returncode}): {line}{out_text[-1500:]}\n{err_text[-1500:]}")
    t_worker = None
    try:
        with open(os.path.join(run_dir, "logs", "rank0.log")) as fh:
            for log_line in fh:
                if " device: " in log_line:
                    t_worker = _log_time(log_line) - t0
                    break
    except (OSError, ValueError):
        pass
    return {"dir": t_dir, "worker": t_worker, "first": t_first, "end": t_end}


def gui_available() -> str:
    """'' when nnconsole.app.shell.application and nnconsole.app.shell.main_window import; otherwise why not."""
    env = dict(bench_env(), QT_QPA_PLATFORM="offscreen")
    probe = subprocess.run([PYTHON, "-c", "import nnconsole.app.shell.application, nnconsole.app.shell.main_window"],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    return "" if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["import failed"])[-1]


def gui_startup(project: str, home: str) -> float:
    env = dict(bench_env(), QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=os.path.join(home, "config"),
               XDG_DATA_HOME=os.path.join(home, "data"), XDG_CACHE_HOME=os.path.join(home, "cache"), HOME=home)
    t0 = time.time()
    proc = subprocess.run([PYTHON, "-c", GUI_DRIVER, project], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    for line in proc.stdout.splitlines():
        if line.startswith("PAINTED "):
            return float(line.split()[1]) - t0
    raise RuntimeError(f"the GUI did not paint its window:\n{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")


def main() -> int:
    parser = parse_quick(doc=__doc__)
    parser.add_argument("--rounds", type=int, default=0, help="runs per case (default 7, quick 2)")
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 7)
    folder = scratch("startup")
    project = digits_project(folder, "digits_cnn", epochs=1, batch=32, monitor=1)
    print(f"start-up: {machine()}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {rounds} runs per case, alternating")
    train_startup(project, 1, os.path.join(folder, "runs"))  # fills the dataset decode cache
    results = {1: [], 2: []}
    for r in range(rounds):
        for n in ((1, 2) if r % 2 == 0 else (2, 1)):
            results[n].append(train_startup(project, n, os.path.join(folder, "runs")))
    rows = []
    for n in (1, 2):
        res = results[n]
        firsts = [x["first"] for x in res if x["first"] is not None]
        rows.append((n, len(res), median(x["dir"] for x in res if x["dir"] is not None),
                     median(x["worker"] for x in res if x["worker"] is not None), median(firsts), spread(firsts),
                     median(x["end"] for x in res)))
    print(table(("workers", "runs", "run dir s", "worker up s", "1st iteration s", "1st iteration range",
                 "whole run (1 epoch) s"), rows,
                title="nnconsole train -> milestones (seconds after spawning the CLI; medians)"))
    why = gui_available()
    if why:
        print(f"\nGUI start-up: not measured, nnconsole.app.shell.application / nnconsole.app.shell.main_window do not import here ({why})")
    else:
        home = scratch("startup-gui")
        times = [gui_startup(project, home) for _ in range(rounds)]
        print(table(("GUI start -> main window painted", "runs", "median s", "range s"),
                    [("python -c <nnconsole.app.shell.application main, offscreen>", len(times), median(times), spread(times))],
                    title="GUI start-up (QT_QPA_PLATFORM=offscreen, scratch settings folder, project opened)"))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
