"""Engine overhead: time per training iteration of the engine's worker loop against a hand-written nnabla loop.

Both run in this one process, one thread, alternating round by round, on the same data arrays, the same
per-worker batch, the same solver (Adam) and the same number of iterations per epoch:

- engine: ``nnconsole.engine.train.trainer.Trainer.run()`` on a real run directory (metrics.jsonl, logs, monitor records
  every ``log_interval`` iterations). Timed from the end of one epoch's validation to the start of
  the next one's, so start-up, validation, checkpoints and the final export are excluded; epoch 1 is
  warm-up and is dropped.
- hand: the loop a user would write with nnabla's parametric functions: feed, zero_grad, forward,
  backward, update. Epoch 1 dropped too.
- hand+fix: the same hand loop with the one process-wide tweak the engine applies
  (``nnconsole.engine.comm.cpu.speed_up_nnabla_accessors``: nnabla's ``.d``/``.g`` accessors stop retrying a failed
  import), which isolates the loop's own overhead. nnconsole.engine.runtime.graph builds the same nnabla functions as the
  hand model (checked: the function lists match, but for the loss mean taken in two steps).

The goal (issue 7) is engine / hand <= 1.05.
"""
from __future__ import annotations

import os
import sys
import time

from common import (digits_project, machine, median, parse_quick, pin_threads, run_main, scratch,  # noqa: E402
                    spread, table)

pin_threads(1)

import numpy as np  # noqa: E402
from nnconsole.engine.check.project_file import load_valid_project

GOAL = 1.05
FIX_KEY = "nnabla.nnabla_ext"
ABSENT = object()
LOOPS = ("hand", "hand+fix")


class HandLoop:
    """A plain nnabla training loop: feed, zero_grad, forward, backward, update; one epoch per call."""

    def __init__(self, inputs: dict, loss, dataset, B: int, lr: float, iters: int, seed: int = 0,
                 accessor_fix: bool = False) -> None:
        import nnabla as nn
        import nnabla.solvers as S

        self.inputs, self.loss, self.B, self.iters = inputs, loss, B, iters
        self.arrays = {name: dataset.arrays[name] for name in inputs}
        self.size = dataset.size
        self.solver = S.Adam(lr)
        self.solver.set_parameters(nn.get_parameters())
        self.rng = np.random.RandomState(seed)
        self.accessor_fix = accessor_fix

    def epoch(self) -> tuple:
        """(wall, CPU) seconds per iteration of one epoch."""
        B, loss, solver = self.B, self.loss, self.solver
        # A plain process pays nnabla's failed relative import on every .d access; the engine removes
        # it (nnconsole.engine.comm.cpu.speed_up_nnabla_accessors). Run this loop in the state it asks for.
        saved = sys.modules.pop(FIX_KEY, ABSENT)
        if self.accessor_fix:
            sys.modules[FIX_KEY] = None
        try:
            return self._epoch(B, loss, solver)
        finally:
            sys.modules.pop(FIX_KEY, None)
            if saved is not ABSENT:
                sys.modules[FIX_KEY] = saved

    def _epoch(self, B, loss, solver) -> tuple:
        start, cpu = time.perf_counter(), time.process_time()
        order = np.resize(self.rng.permutation(self.size), self.iters * B)
        for k in range(self.iters):
            idx = order[k * B:(k + 1) * B]
            for name, var in self.inputs.items():
                var.d = self.arrays[name][idx]
            solver.zero_grad()
            loss.forward(clear_no_need_grad=True)
            loss.backward(clear_buffer=True)
            solver.update()
        return (time.perf_counter() - start) / self.iters, (time.process_time() - cpu) / self.iters


def hand_model(model: str, B: int):
    """The same network written directly with nnabla's parametric functions."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    x = nn.Variable((B, 1, 8, 8))
    y = nn.Variable((B, 1))
    if model == "digits_cnn":
        h = F.relu(PF.convolution(x, 16, (3, 3), pad=(1, 1), name="conv1"))
        h = F.max_pooling(h, (2, 2), (2, 2))
        h = F.relu(PF.convolution(h, 32, (3, 3), pad=(1, 1), name="conv2"))
        h = F.max_pooling(h, (2, 2), (2, 2))
        h = F.relu(PF.affine(h, 64, name="fc1"))
        h = PF.affine(h, 10, name="fc2")
    elif model == "wide_mlp":
        h = F.relu(PF.affine(x, 1024, name="fc1"))
        h = F.relu(PF.affine(h, 1024, name="fc2"))
        h = PF.affine(h, 10, name="fc3")
    elif model == "wide_cnn":
        h = F.relu(PF.convolution(x, 64, (3, 3), pad=(1, 1), name="conv1"))
        h = F.max_pooling(h, (2, 2), (2, 2))
        h = F.relu(PF.convolution(h, 128, (3, 3), pad=(1, 1), name="conv2"))
        h = F.max_pooling(h, (2, 2), (2, 2))
        h = PF.affine(h, 10, name="fc1")
    else:
        raise ValueError(model)
    loss = F.mean(F.softmax_cross_entropy(h, y))
    return {"x": x, "y": y}, loss


def one_run(model: str, project_path: str, out_root: str, epochs: int, round_no: int) -> dict:
    """One engine run of ``epochs`` epochs; after each epoch (outside the engine's timing) one epoch of
    each hand loop runs, so every engine epoch has hand epochs measured right next to it."""
    import nnabla as nn

    from nnconsole.engine.comm.cpu import SingleComm
    from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
    from nnconsole.engine.train.trainer import Trainer
    from nnconsole.engine.rundir.launch_options import WorkerOptions

    project = load_valid_project(project_path)
    run_dir = prepare_run(project, LaunchRequest(project_path=project_path, output=out_root, epochs=epochs), 1)
    trainer = Trainer(run_dir, SingleComm(), WorkerOptions.read(run_dir))
    times = {"engine": [], "hand": [], "hand+fix": []}  # (wall, cpu) per epoch
    try:
        trainer.setup()
        plan = trainer.plan
        B, ipe = plan.per_worker_batch, plan.iterations_per_epoch
        loops = {}
        for name in LOOPS:
            with nn.parameter_scope(f"bench_{name}"):
                inputs, loss = hand_model(model, B)
                loops[name] = HandLoop(inputs, loss, trainer.train_set, B, plan.effective_lr, ipe,
                                       accessor_fix=name == "hand+fix")
        original_end = trainer._end_epoch
        last = [0.0, 0.0]

        def end_epoch(epoch, started, coverage=None):
            times["engine"].append(((time.perf_counter() - last[0]) / ipe, (time.process_time() - last[1]) / ipe))
            names = list(loops) if (epoch + round_no) % 2 == 0 else list(loops)[::-1]
            for name in names:
                times[name].append(loops[name].epoch())
            original_end(epoch, started, coverage)
            last[:] = [time.perf_counter(), time.process_time()]

        trainer._end_epoch = end_epoch
        trainer._finish = lambda: None  # the export is tear-down, not loop time
        last[:] = [time.perf_counter(), time.process_time()]
        trainer.run()
        return {"times": {k: v[1:] for k, v in times.items()}, "batch": B, "ipe": ipe}
    finally:
        trainer.close()


def measure(model: str, rounds: int, epochs: int, out_root: str) -> dict:
    path = digits_project(os.path.join(out_root, model), model, epochs=epochs, batch=32, monitor=10)
    times = {"engine": [], "hand": [], "hand+fix": []}
    ratios = {"hand": [], "hand+fix": []}  # (wall, cpu) per epoch pair
    for r in range(rounds):
        run = one_run(model, path, os.path.join(out_root, model, "runs"), epochs, r)
        for kind, values in run["times"].items():
            times[kind] += values
        for kind in ratios:
            ratios[kind] += [(e[0] / h[0], e[1] / h[1]) for e, h in zip(run["times"]["engine"], run["times"][kind])]
    return {"times": times, "ratios": ratios, "batch": run["batch"], "ipe": run["ipe"]}


EPOCHS = {"digits_cnn": 25, "wide_mlp": 8, "wide_cnn": 8}


def main() -> int:
    parser = parse_quick(doc=__doc__)
    parser.add_argument("--models", default="digits_cnn,wide_mlp")
    parser.add_argument("--rounds", type=int, default=0, help="engine runs per model (default 3, quick 1)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    out_root = scratch("overhead")
    print(f"engine overhead: {machine()}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(f"{rounds} engine run(s) per model; after every engine epoch one epoch of each hand loop runs, in "
          "alternating order; epoch 1 of every run dropped; batch 32, Adam, 1 process, 1 thread")
    rows = []
    ok = True
    for model in args.models.split(","):
        epochs = 4 if args.quick else EPOCHS.get(model, 8)
        m = measure(model, rounds, epochs, out_root)
        t, rat = m["times"], m["ratios"]
        cpu_ratio = median(r[1] for r in rat["hand"])
        wall_ratio = median(r[0] for r in rat["hand"])
        ok &= cpu_ratio <= GOAL
        rows.append((model, m["batch"], m["ipe"], len(rat["hand"]),
                     median(x[1] for x in t["engine"]) * 1e3, median(x[1] for x in t["hand"]) * 1e3,
                     median(x[1] for x in t["hand+fix"]) * 1e3,
                     cpu_ratio, spread([r[1] for r in rat["hand"]]), median(r[1] for r in rat["hand+fix"]),
                     median(x[0] for x in t["engine"]) * 1e3, median(x[0] for x in t["hand"]) * 1e3, wall_ratio,
                     "yes" if cpu_ratio <= GOAL else "NO"))
    print(table(("model", "batch", "iters/epoch", "epoch pairs", "engine CPU ms/it", "hand CPU ms/it",
                 "hand+fix CPU ms/it", "engine/hand CPU", "CPU ratio range", "engine/hand+fix CPU",
                 "engine wall ms/it", "hand wall ms/it", "engine/hand wall", f"CPU ratio <= {GOAL}"), rows,
                title="Time per iteration, medians over epochs; ratios: per epoch pair, then median. CPU = "
                      "process CPU time (insensitive to other processes on the machine); wall = perf_counter"))
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(run_main(main))
