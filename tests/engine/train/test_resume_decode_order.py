"""Issue 31: a resumed run's overlapped cache build decodes the files in the order the run first needs them, from
the epoch and position it resumes at (``loading.first_needed_order``), not in epoch 0's order; a build folder
started in another order is resumed, its written chunks kept (``build_overlap.keep_done_chunks``); and a resumed
run on a cold cache trains the parameters of the run that was never stopped."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.comm.cpu import SingleComm
from nnconsole.engine.data import cache_build, dataset_entry, decode_process
from nnconsole.engine.data.cache import order_file, variable_file
from nnconsole.engine.data.build_overlap import first_use_order, keep_done_chunks
from nnconsole.engine.data.loading import build_note, epoch_order, first_needed_order, load_dataset, worker_batches
from nnconsole.engine.launch.launcher import LaunchRequest, prepare_run
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.launch_options import WorkerOptions
from nnconsole.engine.test_seams import SEAMS_VARIABLE
from nnconsole.engine.train.trainer import Trainer
from tests.support.datasets import cache_entries
from tests.support.image_projects import cycled_image_project, write_cycled_csv
from tests.support.training import final_params, results_of, train_file_in_process

SHAPES = {"x": (1, 8, 8), "y": (1,)}


def _drawn(size: int, seed: int, epoch: int, first: int, B: int, N: int) -> np.ndarray:
    """The rows the training loop feeds from iteration ``first`` of ``epoch`` to its end, every rank's in turn."""
    shares = [worker_batches(epoch_order(size, seed, epoch), B, r, N) for r in range(N)]
    return np.concatenate([shares[r][k] for k in range(first, len(shares[0])) for r in range(N)])


def test_a_new_run_needs_epoch_0_in_order():
    np.testing.assert_array_equal(first_needed_order(50, 5, True), epoch_order(50, 5, 0, True))


def test_a_resumed_run_needs_the_rest_of_its_epoch_first_then_the_next_epochs_order():
    """50 rows, 2 workers of 4 (8 an iteration: the last one wraps to the order's start), resumed at epoch 2,
    iteration 3: the files are first used as the loop draws the rest of epoch 2, then as it draws epoch 3."""
    size, seed, B, N, epoch, first = 50, 7, 4, 2, 2, 3
    needed = first_needed_order(size, seed, True, epoch, first * B * N, batch=B * N)
    identity = np.arange(size)
    uses = first_use_order(identity, needed, size)
    rest = first_use_order(identity, _drawn(size, seed, epoch, first, B, N), size)
    seen = len(np.unique(_drawn(size, seed, epoch, first, B, N)))
    np.testing.assert_array_equal(uses[:seen], rest[:seen])
    # then the next epoch's first uses, but for the rows its last iteration might have wrapped to (the first B*N of
    # the order: it took 6 of them here) that come first, in case
    early = set(uses[:seen].tolist()) | set(epoch_order(size, seed, epoch)[:B * N].tolist())
    later = [int(r) for r in first_use_order(identity, _drawn(size, seed, epoch + 1, 0, B, N), size) if r not in early]
    assert [int(r) for r in uses[seen:] if r not in early] == later
    assert sorted(uses.tolist()) == list(range(size))


def test_a_resumed_run_after_a_whole_epoch_needs_the_next_epoch_from_its_start():
    np.testing.assert_array_equal(first_needed_order(40, 5, True, 3, 0, batch=8), epoch_order(40, 5, 3, True))


def test_a_build_resumed_in_another_order_keeps_the_chunks_it_wrote():
    previous = np.array([5, 2, 7, 0, 1, 3, 6, 4, 8, 9], dtype=np.uint32)
    wanted = np.array([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    order = keep_done_chunks(previous, [0, 2], wanted, chunk=2)  # chunks 0 (5, 2) and 2 (1, 3) were written
    assert order.tolist() == [5, 2, 9, 8, 1, 3, 7, 6, 4, 0]
    assert sorted(order.tolist()) == list(range(10))


def test_a_stopped_build_resumed_with_another_first_order_goes_on_from_where_it_stopped(tmp_path, monkeypatch):
    """A build in epoch 0's order stops after 2 chunks; loading again with a resumed run's order (epoch 1 from row
    16) decodes only the rest, the files that order needs first before the others, and the pixels are exact."""
    monkeypatch.setattr(cache_build, "CHUNK", 2)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=40, files=16)
    reference = load_dataset(csv_path, SHAPES, cache=False)
    asked = []

    def stop() -> bool:  # asked before each chunk: a stop once two chunks (4 files) are written
        asked.append(1)
        return len(asked) > 3
    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 10}))
    first = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=lambda n: epoch_order(n, 5, 0),
                         stop=stop)
    assert first.images["x"].state.wait_end(60) and first.images["x"].state.stopped
    before = first.images["x"].state.chunk_of[0]  # file -> the chunk that held it
    (progress,) = (tmp_path / "c").glob(".*.partial/progress.json")
    kept = json.loads(progress.read_text())["count"]
    written = kept // 2  # chunks, decoded in order by this in-process build
    assert written >= 2
    monkeypatch.delenv(SEAMS_VARIABLE)
    seen, decoded = [], []
    real = dataset_entry.first_use_order
    monkeypatch.setattr(dataset_entry, "first_use_order", lambda *a: seen.append(a[1]) or real(*a))
    real_chunk = decode_process.decode_chunk
    monkeypatch.setattr(decode_process, "decode_chunk", lambda path, rows, *a, **k: decoded.extend(rows) or
                        real_chunk(path, rows, *a, **k))
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=lambda n: first_needed_order(
        n, 5, True, 1, 16, 8))
    state = again.images["x"].state
    assert state.wait_end(60) and state.error is None and not state.stopped
    assert len(decoded) == 16 - kept, f"the build decoded {len(decoded)} files; {16 - kept} were left"
    np.testing.assert_array_equal(seen[0], first_needed_order(40, 5, True, 1, 16, 8))
    after = state.chunk_of[0]
    wanted = [int(f) for f in first_use_order(np.arange(40) % 16, seen[0], 16) if before[f] >= written]
    for c in range(8):
        files = set(np.flatnonzero(after == c).tolist())
        if c < written:  # kept: the same files in the same chunk
            assert files == set(np.flatnonzero(before == c).tolist()), c
        else:  # the rest, in the order the resumed run needs them
            assert files == set(wanted[(c - written) * 2:(c - written + 1) * 2]), c
    np.testing.assert_array_equal(again.gather("x", np.arange(40)), reference.gather("x", np.arange(40)))
    assert len(cache_entries(tmp_path / "c")) == 1 and not list((tmp_path / "c").glob(".*.partial"))
    assert not list((tmp_path / "c").glob("*/" + order_file(variable_file(0)))), "a finished entry kept its decode order"


def test_a_run_resumed_mid_epoch_on_a_cold_cache_decodes_from_there_and_trains_the_uninterrupted_parameters(
        tmp_path, monkeypatch):
    """2 epochs of 15 iterations: a run stopped at iteration 21 (epoch 2, 48 rows in) is resumed after its cache
    was deleted; its build is given epoch 2's order from row 48, and it ends with the parameters of a run that
    was never stopped."""
    monkeypatch.setattr(cache_build, "CHUNK", 4)
    project = cycled_image_project(str(tmp_path / "p"), rows=120, files=60, epochs=2, batch=8)
    cache = Path(project).parent / ".nnconsole-cache"
    reference = train_file_in_process(project)
    shutil.move(results_of(project), str(tmp_path / "reference"))
    reference = str(tmp_path / "reference" / Path(reference).name)

    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"pause_at_iteration": 20}))
    run_dir = prepare_run(load_valid_project(project), LaunchRequest(output=results_of(project)), workers=1)
    trainer = Trainer(run_dir, SingleComm(), WorkerOptions())

    def stop_at_the_pause() -> None:
        while getattr(trainer, "iteration", 0) < 20:
            time.sleep(0.01)
        open(trainer.stop.path, "w").close()
    try:
        trainer.setup()
        threading.Thread(target=stop_at_the_pause, daemon=True).start()
        assert trainer.run() == "stopped" and trainer.iteration == 21
    finally:
        trainer.close()
    os.remove(trainer.stop.path)
    shutil.rmtree(cache)  # cold: the resumed run builds the cache again

    monkeypatch.setenv(SEAMS_VARIABLE, json.dumps({"decode_delay_ms": 20}))
    seen = []
    real = dataset_entry.first_use_order
    monkeypatch.setattr(dataset_entry, "first_use_order", lambda *a: seen.append(a[1]) or real(*a))
    resumed = Trainer(run_dir, SingleComm(), WorkerOptions(resume=True))
    try:
        resumed.setup()
        assert (resumed.start_epoch, resumed.samples_into_epoch) == (1, 48)
        assert resumed.run() == "finished"
        assert build_note(resumed.train_set) is None  # as run_worker does: the build ends (complete) first
    finally:
        resumed.close()
    np.testing.assert_array_equal(seen[0], first_needed_order(120, 5, True, 1, 48, 8))  # the training set's build
    builds = [r for r in runs.iter_metrics(run_dir, None) if r.get("type") == "dataset_cache"
              and r.get("dataset") == "training"]
    assert builds and builds[-1]["done"] == builds[-1]["total"] == 60
    a, b = final_params(reference), final_params(run_dir)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(b[name], a[name], rtol=0, atol=1e-6, err_msg=name)


def test_a_build_folder_whose_saved_order_is_damaged_starts_over_and_still_gives_the_exact_pixels(tmp_path,
                                                                                                monkeypatch):
    monkeypatch.setattr(cache_build, "CHUNK", 2)
    csv_path = write_cycled_csv(tmp_path, "train.csv", rows=20, files=8)
    reference = load_dataset(csv_path, SHAPES, cache=False)
    asked = []
    first = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=lambda n: epoch_order(n, 5, 0),
                         stop=lambda: asked.append(1) or len(asked) > 3)
    assert first.images["x"].state.wait_end(60) and first.images["x"].state.stopped
    (saved,) = (tmp_path / "c").glob(".*.partial/" + order_file(variable_file(0)))
    saved.write_bytes(b"not an array")
    decoded = []
    real_chunk = decode_process.decode_chunk
    monkeypatch.setattr(decode_process, "decode_chunk", lambda path, rows, *a, **k: decoded.extend(rows) or
                        real_chunk(path, rows, *a, **k))
    again = load_dataset(csv_path, SHAPES, cache_dir=tmp_path / "c", first_order=lambda n: first_needed_order(
        n, 5, True, 1, 4, 8))
    assert again.images["x"].state.wait_end(60) and again.images["x"].state.error is None
    assert sorted(decoded) == list(range(8)), "a build whose order is unknown resumed"
    np.testing.assert_array_equal(again.gather("x", np.arange(20)), reference.gather("x", np.arange(20)))
