"""The optimizers after the first (issue 17): each trains its own network with its own solver and schedule.

As nnabla's ``nnabla_cli train`` does, every iteration runs the optimizers in order: the CONFIG tab's
(``Trainer`` itself), then each of ``Project.optimizers`` whose range holds the iteration, which feeds its
network a batch of its dataset (the training split shares the first optimizer's batch, as nnabla's data
iterators are shared), back-propagates that network's losses, all-reduces and updates the learned
parameters of that network whose learning-rate multiplier is not 0. Each optimizer's batch, learning rate
and schedule on N workers are planned as the first one's (``optimizer_plans``); its start/end iterations
are divided by N as nnabla does. Weights are shared through parameter scopes: one set per scope.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from nnconsole.engine.project.model import ExtraOptimizer, Project
from nnconsole.engine.plan.worker_plan import make_plan
from nnconsole.engine.project.structure import FIRST_OPTIMIZER, optimizer_project
from nnconsole.engine.runtime.graph import build_graph, lr_multipliers
from nnconsole.engine.runtime.generated_inputs import fill_generated, optimizer_stream
from nnconsole.engine.runtime.solvers import applies_weight_decay_itself, group_parameters, make_solver
from nnconsole.engine.data.generated import training_slots
from nnconsole.engine.data.loading import epoch_order, worker_batches
from nnconsole.engine.errors import TrainingError
from nnconsole.engine.rundir.protocol import OPTIMIZER_LOSS, OptimizerLossRecord
from nnconsole.engine.train.simulated import worker_context


def run_range(entry: ExtraOptimizer, divisor: int) -> tuple:
    """(start, end) iterations of the run, the project's single-worker ones divided by the plan's
    ``iteration_divisor`` (N when each worker keeps the batch size) as nnabla's loader divides them by N
    (0 = no bound)."""
    def divide(value: int) -> int:
        return (value - 1) // divisor + 1 if value > 0 else 0
    return divide(entry.start_iteration), divide(entry.end_iteration)


def optimizer_plans(project: Project, workers: Optional[int] = None, dataset_size: Optional[int] = None,
                    device: str = "cpu", gpus_available: Optional[int] = None) -> List[tuple]:
    """(name, Plan) of every optimizer, the CONFIG tab's first, each planned as today's one optimizer."""

    plans = [(FIRST_OPTIMIZER, make_plan(project, workers=workers, dataset_size=dataset_size, device=device,
                                         gpus_available=gpus_available))]
    for entry in project.optimizers:
        plans.append((entry.name, make_plan(optimizer_project(project, entry), workers=workers,
                                            dataset_size=dataset_size, device=device, gpus_available=gpus_available)))
    return plans


@dataclass
class OptimizerRun:
    """One extra optimizer's graph, solvers, schedule, range and gradient-accumulation state.

    ``graphs``: the graph of each worker this process trains (its rank, or every simulated worker);
    ``graph`` is the first of them.
    """

    entry: ExtraOptimizer
    graph: Any
    groups: List[tuple]
    solvers: List[Any]
    schedule: Any
    update_interval: int
    start: int
    end: int
    weight_decay: float
    trainable: List[Any] = field(default_factory=list)
    accumulated: int = 0
    loss_sum: float = 0.0  # this rank's losses since the last monitor record (``loss_records``)
    loss_count: int = 0
    graphs: Dict[int, Any] = field(default_factory=dict)

    def active(self, iteration: int) -> bool:
        """Whether it runs at 0-based ``iteration`` (nnabla: start <= iteration + 1 <= end)."""
        return (self.start == 0 or iteration + 1 >= self.start) and (self.end == 0 or iteration + 1 <= self.end)


def build_optimizer_runs(trainer: Any) -> List[OptimizerRun]:
    """The extra optimizers of ``trainer.project`` on its workers (after the first optimizer's set-up)."""
    from nnconsole.engine.layers.sync_batchnorm import across_workers

    project, comm, cfg = trainer.project, trainer.comm, trainer.project.config
    if getattr(trainer.device, "type_config", "float") == "half":

        raise TrainingError("a project with several optimizers trains in float precision only (half precision's "
                            "loss scaling covers the first optimizer); set config.precision to float")
    runs: List[OptimizerRun] = []
    for entry in project.optimizers:
        view = optimizer_project(project, entry)
        plan = make_plan(view, workers=comm.size, dataset_size=trainer.train_set.size, device=trainer.device.backend)
        with across_workers(trainer.graph_comm):  # VATNoise buffers shared with the worker's other networks
            graphs = {r: build_graph(view.network, plan.per_worker_batch, "train", seed=cfg.seed, rank=r,
                                     noise=trainer.noises[r]) for r in trainer.local_ranks}
        graph = graphs[trainer.local_ranks[0]]
        learned = {name: var for name, var in graph.parameters.items() if var.need_grad}
        groups = group_parameters(learned, lr_multipliers(view.network, graph))
        solvers = []
        for mult, group in groups:
            solver = make_solver(entry.optimizer, plan.effective_lr * mult)
            solver.set_parameters(group)
            solvers.append(solver)
        wd = entry.optimizer.weight_decay
        start, end = run_range(entry, plan.iteration_divisor)
        runs.append(OptimizerRun(
            entry=entry, graph=graph, groups=groups, solvers=solvers, schedule=plan.schedule_params(),
            update_interval=plan.update_interval, start=start, end=end,
            weight_decay=wd if wd and not applies_weight_decay_itself(entry.optimizer) else 0.0,
            trainable=[p for _, group in groups for p in group.values()], graphs=graphs))
    return runs


def step_optimizers(trainer: Any, runs: List[OptimizerRun], iteration: int, epoch: int, k: int,
                    train_indices: Dict[int, np.ndarray]) -> None:
    """One iteration of every extra optimizer whose range holds 0-based ``iteration`` (collective).

    ``train_indices``: the first optimizer's rows of this iteration for each worker this process trains.
    """
    import nnabla as nn  # deferred: nnabla stays out of the launcher


    N = trainer.comm.size
    for number, run in enumerate(runs, start=1):
        if not run.active(iteration):
            continue
        if run.accumulated == 0:
            for solver in run.solvers:
                solver.zero_grad()
        U = run.update_interval
        reduce_now = trainer.overlap and run.accumulated == U - 1
        scale = 1.0 / (U * N) if trainer._prescaled else 1.0 / U
        local = trainer.local_ranks
        for rank in local:  # this rank, or each simulated worker in turn
            graph = run.graphs[rank]
            slot_k = k
            if run.entry.dataset == "training":
                dataset, indices = trainer.train_set, train_indices[rank]
            else:
                dataset = trainer.valid_set
                order = epoch_order(dataset.size, trainer.project.config.seed, epoch, trainer.project.datasets.shuffle)
                batches = worker_batches(order, graph.batch_size, rank, N)
                slot_k = k % len(batches)
                indices = batches[slot_k]
            trainer._feed(graph, dataset, indices)
            if graph.generated:  # this optimizer's own draws (nnabla_cli's optimizers each call the generators)
                fill_generated(graph.generated, trainer.project.config.seed, optimizer_stream(number), "train", epoch,
                               training_slots(slot_k, graph.batch_size, rank, N))
            graph.fill_noise()  # VATNoise's generated buffers (Buf.Generator), as nnabla's generator_variable
            with worker_context(trainer.comm, rank):  # a simulated worker's own running statistics
                nn.forward_all([graph.loss], clear_no_need_grad=True)
            trainer.comm.backward(graph.loss, scale, run.trainable, reduce=reduce_now, average=not trainer._prescaled)
            loss = float(np.asarray(graph.loss.d))
            if not np.isfinite(loss):
                raise TrainingError(f"the loss of optimizer '{run.entry.name}' (network '{run.entry.network}') "
                                    f"became {loss} at iteration {iteration}; lower its learning rate or check the "
                                    "data. The last good checkpoint is kept.")
            run.loss_sum += loss / len(local)  # the mean over this process's workers (see Trainer.run)
        run.loss_count += 1
        run.accumulated += 1
        if run.accumulated < U:
            continue
        run.accumulated = 0
        if not reduce_now:
            trainer.comm.all_reduce_gradients(run.trainable, average=not trainer._prescaled)
        lr = trainer._lr_at(run.schedule, iteration + 1)
        for (mult, _), solver in zip(run.groups, run.solvers):
            solver.set_learning_rate(lr * mult)
            if run.weight_decay:
                solver.weight_decay(run.weight_decay)
            solver.update()


def loss_records(trainer: Any, runs: List[OptimizerRun], epoch: float) -> List[Any]:
    """One ``optimizer_loss`` record per extra optimizer that ran since the last call: its loss averaged over
    those iterations and all ranks (collective: every rank calls it with the ``train`` record). Resets the sums."""

    if not runs:
        return []
    sums = trainer.comm.sum([value for run in runs for value in (run.loss_sum, run.loss_count)])
    records = []
    for i, run in enumerate(runs):
        total, count = float(sums[2 * i]), float(sums[2 * i + 1])
        run.loss_sum, run.loss_count = 0.0, 0
        if count > 0:
            records.append(OptimizerLossRecord(
                type=OPTIMIZER_LOSS, optimizer=run.entry.name, network=run.entry.network,
                iteration=trainer.iteration, epoch=epoch, loss=total / count,
                lr=float(trainer._lr_at(run.schedule, trainer.iteration))))
    return records


def all_solvers(trainer: Any) -> List[Any]:
    """The first optimizer's solvers, then every extra optimizer's (the order checkpoints keep them in)."""
    return list(trainer.solvers) + [s for run in getattr(trainer, "extra_optimizers", []) for s in run.solvers]
