"""GUI: learning-curve redraw time with 1e3, 1e4 and 1e5 points, and event-loop latency during a run.

Runs with QT_QPA_PLATFORM=offscreen (set here unless already set). The plots are the training tab's
own ``nnconsole.app.training.curves.LearningCurves`` widget when it imports (three linked plots, five
curves, 'peak' auto-downsampling and clip-to-view); otherwise a pyqtgraph GraphicsLayoutWidget with
the same settings. The widget is 1000 x 700 pixels.

1. Redraw: N training records (loss, error and learning rate, so 3N points) plus N/50 validation
   records are loaded, then timed, 30 times each:
   - live update: append 10 records (``add_records``: setData), then process events, which runs the
     range update, downsampling, clipping and the one paint that the update scheduled;
   - repaint: a full synchronous repaint of the settled, unchanged plots (``viewport().repaint()``);
   - zoom: set the x range to a random window and process events (the paint included).
   The first live update after loading counts: it used to pay for a re-layout and a buffer copy.
   Each redraw is timed in wall time and in the GUI thread's CPU time, and is followed by a fixed
   piece of pure Python timed the same way ("reference work"): its max/median shows how much the
   machine alone spreads a fixed cost at those moments. The goal (issue 7: no redraw
   above 16 ms at 1e5 points) is judged on the CPU time, which is what the redraw costs: on a shared
   VM the wall time also holds whatever the host gave to other tenants meanwhile (both are printed).
2. Latency: a 2-worker ``nnconsole train`` (digits CNN, a record every iteration) streams metrics;
   the GUI side tails metrics.jsonl as the training tab does (``nnconsole.app.bridge.run_controller.
   RunController`` at its 66 ms poll, records into the curves), while a 5 ms QTimer measures how late
   the event loop serves it. Lateness = actual interval - 5 ms.
"""
from __future__ import annotations

import os
import sys
import time

from common import digits_project, machine, parse_quick, pin_threads, run_main, scratch, table  # noqa: E402

pin_threads(1)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

GOAL_MS = 16.0
SIZE = (1000, 700)


def make_records(n: int, start: int = 0, per_epoch: int = 50, total: int = 0) -> list:
    """Records shaped like the engine's; ``total`` is the run's planned iterations (as the engine writes)."""
    rng = np.random.RandomState(start)
    out = []
    for i in range(start, start + n):
        epoch = i / per_epoch
        out.append({"type": "train", "iteration": i + 1, "epoch": epoch,
                    "loss": float(2.3 * np.exp(-epoch / 40) + 0.05 * rng.rand()),
                    "error": float(0.9 * np.exp(-epoch / 30) + 0.02 * rng.rand()), "lr": 0.001 * 0.999 ** epoch,
                    "total_iterations": total or start + n})
        if (i + 1) % per_epoch == 0:
            out.append({"type": "validation", "epoch": (i + 1) / per_epoch, "iteration": i + 1,
                        "loss": float(2.3 * np.exp(-epoch / 40) + 0.1), "error": float(0.9 * np.exp(-epoch / 30))})
    return out


class Curves:
    """The training tab's LearningCurves, or the same plot settings on bare pyqtgraph."""

    def __init__(self) -> None:
        try:
            from nnconsole.app.training.curves import LearningCurves
            self.widget = LearningCurves()
            self.real = True
            self.run = os.path.abspath("bench-run")
            self.widget.set_primary(self.run, [])
        except Exception as exc:  # noqa: BLE001 - the GUI is being written; fall back to pyqtgraph
            self.real = False
            self.why = f"{type(exc).__name__}: {exc}"
            self._fallback()
        self.widget.resize(*SIZE)
        self.widget.show()

    def _fallback(self) -> None:
        import pyqtgraph as pg

        self.widget = pg.GraphicsLayoutWidget(show=False)
        self.plots, self.curves, self.data = {}, {}, {}
        for row, key in enumerate(("loss", "error", "lr")):
            item = self.widget.addPlot(row=row, col=0)
            item.setDownsampling(auto=True, mode="peak")
            item.setClipToView(True)
            item.addLegend()
            self.plots[key] = item
        for key, plot in (("train_loss", "loss"), ("valid_loss", "loss"), ("train_error", "error"),
                          ("valid_error", "error"), ("lr", "lr")):
            curve = self.plots[plot].plot([], [], pen=pg.mkPen("#1f77b4", width=2), antialias=False, name=key)
            curve.setClipToView(True)
            curve.setDownsampling(auto=True, method="peak")
            self.curves[key] = curve
            self.data[key] = ([], [])
        self.plots["error"].setXLink(self.plots["loss"])
        self.plots["lr"].setXLink(self.plots["loss"])

    def add(self, records: list) -> None:
        if self.real:
            self.widget.add_records(self.run, records)
            return
        for r in records:
            keys = ("train_loss", "train_error", "lr") if r["type"] == "train" else ("valid_loss", "valid_error")
            for key in keys:
                field = {"train_loss": "loss", "valid_loss": "loss", "train_error": "error",
                         "valid_error": "error", "lr": "lr"}[key]
                self.data[key][0].append(r["epoch"])
                self.data[key][1].append(r[field])
        for key, curve in self.curves.items():
            curve.setData(np.asarray(self.data[key][0]), np.asarray(self.data[key][1]))

    def plot_items(self) -> list:
        return list(self.widget.plots.values()) if self.real else list(self.plots.values())

    def view(self):
        return self.widget.view if self.real else self.widget


def reference_work() -> None:
    """A fixed piece of pure Python (about 4 ms here): its spread shows the machine's own noise."""
    total = 0
    for i in range(60_000):
        total += i * i


def redraw(app, n: int, reps: int) -> dict:
    """Milliseconds of: live update (add 10 records + the paint it schedules), full repaint, zoom."""
    curves = Curves()
    planned = n + 10 * (reps + 1)  # the live appends below stay inside the run's planned span
    curves.add(make_records(n, total=planned))
    app.processEvents()
    viewport = curves.view().viewport()
    viewport.repaint()
    nxt = n
    out = {"live": [], "repaint": [], "zoom": [], "live_cpu": [], "repaint_cpu": [], "zoom_cpu": []}
    rng = np.random.RandomState(1)
    plot = curves.plot_items()[0]

    out.update(reference=[], reference_cpu=[])

    def timed(kind, action):
        """Wall and GUI-thread CPU time of one redraw (CPU time leaves out what other tenants took),
        then of the fixed reference work, so that both sample the same moments of the machine."""
        for name, work in ((kind, action), ("reference", reference_work)):
            wall, cpu = time.perf_counter(), time.thread_time()
            work()
            out[name + "_cpu"].append(time.thread_time() - cpu)
            out[name].append(time.perf_counter() - wall)

    # Three separate loops: a zoom between live updates would leave the view in a state a streaming
    # run never sees (the widget keeps the run's whole span in view while records arrive).
    for _ in range(reps):
        timed("repaint", viewport.repaint)  # the settled plots, drawn again (e.g. a window uncovered)
    for _ in range(reps):
        records = make_records(10, nxt, total=planned)
        # add: setData on the grown curves, and the paint the widget schedules; processEvents: the
        # range update, downsampling, clipping and that paint.
        timed("live", lambda: (curves.add(records), app.processEvents()))
        nxt += 10
    (x0, x1), _ = plot.viewRange()
    for _ in range(reps):
        lo = rng.uniform(0, nxt / 50 * 0.8)
        width = rng.uniform(0.05, 1.0) * nxt / 50
        timed("zoom", lambda: (plot.setXRange(lo, lo + width, padding=0), app.processEvents()))
        plot.setXRange(x0, x1, padding=0)  # back to the whole run, settled before the next repetition
        app.processEvents()
    out["real"] = curves.real
    out["why"] = getattr(curves, "why", "")
    curves.widget.close()
    curves.widget.deleteLater()
    app.processEvents()
    return out


def timer_lateness(app, keep_going) -> tuple:
    """Serve the event loop while ``keep_going(seconds so far)`` with a 5 ms QTimer running; returns
    (the timer's lateness per tick = actual interval - 5 ms, seconds run), in seconds."""
    from PySide6.QtCore import QTimer

    lateness, last = [], [None]

    def tick():
        now = time.perf_counter()
        if last[0] is not None:
            lateness.append(now - last[0] - 0.005)
        last[0] = now
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    start = time.perf_counter()
    while keep_going(time.perf_counter() - start):
        app.processEvents()
        time.sleep(0.0005)
    timer.stop()
    return lateness, time.perf_counter() - start


def idle_latency(app, seconds: float) -> list:
    """Lateness of the same 5 ms timer with the curves shown and nothing running (the baseline)."""
    curves = Curves()
    curves.add(make_records(200))
    lateness, _ = timer_lateness(app, lambda elapsed: elapsed < seconds)
    curves.widget.close()
    return lateness


def latency(app, seconds_cap: float, quick: bool) -> dict:
    """Event-loop lateness of a 5 ms timer while a 2-worker run streams its metrics into the curves."""
    folder = scratch("gui-latency")
    project = digits_project(folder, "digits_cnn", epochs=4 if quick else 12, batch=32, monitor=1)
    curves = Curves()
    got = [0]
    state = {"done": False, "how": ""}
    try:
        from nnconsole.app.bridge.run_controller import RunController
        controller = RunController()
        state["how"] = "RunController"

        def received(run_dir, records):
            got[0] += len(records)
            curves.add(records)
        controller.records_received.connect(received)
        controller.run_finished.connect(lambda *a: state.update(done=True))
        controller.launch_failed.connect(lambda msg: state.update(done=True, how=f"launch failed: {msg}"))
        controller.start_training(project, 2, output=os.path.join(folder, "runs"))
    except ImportError as exc:
        return {"error": f"nnconsole.app.bridge.run_controller not importable: {exc}"}

    lateness, seconds = timer_lateness(app, lambda elapsed: not state["done"] and elapsed < seconds_cap)
    curves.widget.close()
    return {"lateness": lateness, "records": got[0], "seconds": seconds, "how": state["how"], "real": curves.real}


def main() -> int:
    parser = parse_quick(doc=__doc__)
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([sys.argv[0]])
    reps = 10 if args.quick else 30
    try:  # what nnconsole-gui does once its window is up
        from nnconsole.app.shell.application import freeze_startup_objects
        Curves().widget.close()  # import and build what the console has built by then
        frozen = freeze_startup_objects()
    except ImportError:  # an older console_app
        frozen = 0
    print(f"GUI: {machine()}, QT_QPA_PLATFORM={os.environ['QT_QPA_PLATFORM']}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}; objects frozen out of full garbage collections: {frozen:,}")
    rows = []
    ok = True
    real = None
    for n in (1000, 10000, 100000):
        r = redraw(app, n, reps)
        real = r["real"] if real is None else real
        for kind in ("live", "repaint", "zoom", "reference"):
            wall, cpu = np.asarray(r[kind]) * 1e3, np.asarray(r[kind + "_cpu"]) * 1e3
            met = cpu.max() <= GOAL_MS
            if n == 100000 and kind != "reference":
                ok &= bool(met)
            if kind == "reference":
                rows.append((f"{n:,}", "-", "reference work (fixed)", float(np.median(wall)),
                             float(np.percentile(wall, 95)), float(wall.max()), float(np.median(cpu)),
                             float(cpu.max()), f"max/med {cpu.max() / np.median(cpu):.1f}"))
                continue
            rows.append((f"{n:,}", f"{3 * n:,}", kind, float(np.median(wall)), float(np.percentile(wall, 95)),
                         float(wall.max()), float(np.median(cpu)), float(cpu.max()), "yes" if met else "NO"))
        why = r["why"]
    widget = "nnconsole.app.training.curves.LearningCurves" if real else f"bare pyqtgraph ({why})"
    print(table(("train records", "points", "redraw", "wall ms med", "wall ms p95", "wall ms max", "CPU ms med",
                 "CPU ms max", f"CPU max <= {GOAL_MS:g} ms"), rows,
                title=f"Redraw of {widget}, {SIZE[0]}x{SIZE[1]}, {reps} repetitions. CPU = the GUI thread's CPU "
                      "time (what the redraw costs; wall time also holds what other tenants of the machine took)"))
    idle = np.asarray(idle_latency(app, 3.0)) * 1e3
    lat = latency(app, 60 if args.quick else 120, args.quick)
    rows = [("idle (curves shown, no run)", "-", 3.0, len(idle), float(np.median(idle)),
             float(np.percentile(idle, 99)), float(idle.max()))]
    if "error" in lat:
        print(f"\nevent-loop latency during a run: not measured ({lat['error']})")
    else:
        ms = np.asarray(lat["lateness"]) * 1e3
        rows.append((f"2-worker run, {lat['how']} -> curves", lat["records"], lat["seconds"], len(ms),
                     float(np.median(ms)), float(np.percentile(ms, 99)), float(ms.max())))
    print(table(("case", "records received", "seconds", "ticks", "lateness ms median", "p99", "max"), rows,
                title="Event-loop lateness of a 5 ms QTimer (actual interval - 5 ms)"))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main))
