"""Issue 30, CONFIG's share: with multi_gpu.simulate_workers N above multi_gpu.workers M the plan panel shows the
N-worker plan the run will simulate (logical batch, scaled learning rate, divided intervals), says it is simulated
on this machine's M devices, and predicts the simulation's time per epoch beside N real devices'; an N the launcher
would refuse (not a multiple of M) is said as the launcher says it."""
from __future__ import annotations

import os

import pytest

from nnconsole.app.config.page import create_page
from nnconsole.engine.plan.worker_plan import make_plan, simulated_count, simulation_problem
from tests.gui.support import open_tab_page
from tests.support.runs import measured_run

pytestmark = pytest.mark.gui
SHOTS = "/work/shots/h30gui"
COMPUTE_S = 0.004  # one worker's compute per iteration at batch 32, as a measured run says


def _page(qtbot, project):
    page = open_tab_page(qtbot, create_page, project)
    page.resize(1500, 1000)
    return page


def test_simulated_workers_show_their_plan_and_say_it_is_simulated(qtbot, digits_project):
    measured_run(digits_project, COMPUTE_S)
    page = _page(qtbot, digits_project)
    panel, doc = page.plan_panel, page.document
    doc.set_setting("optimizer.lr_update_interval", 100)  # iterations: divided by the simulated N
    doc.set_setting("multi_gpu.simulate_workers", 8)
    panel.refresh(doc.project)
    real8 = make_plan(doc.project, workers=8, dataset_size=1437)
    assert panel.current is not None and panel.current.workers == 8 and panel.current.simulated
    assert panel.current.logical_batch == real8.logical_batch == 256
    assert panel.current.effective_lr == pytest.approx(real8.effective_lr)  # linear scaling x8
    assert panel.current.effective_lr_update_interval == real8.effective_lr_update_interval == 12  # 100 / 8, floored
    assert panel.cell("LR update interval", 8).startswith("12")
    heads = [panel.table.horizontalHeaderItem(c).text() for c in range(panel.table.columnCount())]
    assert "N=8 (simulated)" in heads and not any("(project)" in h for h in heads)
    summary = panel.summary.text()
    assert "<b>N = 8</b> workers" in summary and "simulated on this machine's 1 device" in summary
    assert "logical batch <b>256</b>" in summary
    assert panel.current.notes[0].startswith("simulated: 8 workers run one after another in this one process")
    assert "simulated: 8 workers" in panel.notes.toPlainText()
    assert panel.error.isHidden()
    rows = panel.prediction.row_texts()
    assert [r[0] for r in rows] == ["1 host x 1", "1 host x 2", "1 host x 4", "1 host x 8", "8 simulated on 1 host x 1"]
    sim, real = panel.prediction.simulation, panel.prediction.predictions[3]
    # 1,437 samples: 6 iterations of 8 x 32, each 8 micro-batches of 4 ms in turn on the one device, no all-reduce
    assert sim.iterations == 6 and sim.allreduce_s == 0.0
    assert sim.epoch_s == pytest.approx(6 * 8 * COMPUTE_S)
    assert rows[-1][1] == f"{sim.epoch_s:.3g}"
    assert rows[-1][2] == f"simulated here: {sim.epoch_s / real.epoch_s:.2f}x the time of 8 real devices"
    os.makedirs(SHOTS, exist_ok=True)
    qtbot.wait(100)  # the layout takes the tables' new heights
    page.grab().save(os.path.join(SHOTS, "config_plan_simulated_8_on_1.png"))


def test_simulation_on_two_devices_counts_half_the_micro_batches_each(qtbot, digits_project):
    measured_run(digits_project, COMPUTE_S)
    page = _page(qtbot, digits_project)
    panel, doc = page.plan_panel, page.document
    doc.set_setting("multi_gpu.workers", 2)
    doc.set_setting("multi_gpu.simulate_workers", 8)
    panel.refresh(doc.project)
    assert panel.planned_workers(doc.project) == (8, 2)
    assert "on this machine's 2 devices" in panel.summary.text() and "4 per device" in panel.summary.text()
    two = next(e for e in panel.prediction.predictions if e.hosts == 1 and e.workers == 2)
    sim = panel.prediction.simulation
    assert sim.compute_s == pytest.approx(4 * two.compute_s)  # 4 micro-batches per device per iteration
    assert sim.allreduce_s == pytest.approx(two.allreduce_s)  # among the 2 real devices
    assert panel.prediction.row_texts()[-1][0] == "8 simulated on 1 host x 2"


def test_simulate_workers_off_or_equal_to_workers_is_a_real_plan(qtbot, digits_project):
    page = _page(qtbot, digits_project)
    panel, doc = page.plan_panel, page.document
    for workers, simulate in ((1, 0), (1, 1), (2, 2)):
        doc.set_setting("multi_gpu.workers", workers)
        doc.set_setting("multi_gpu.simulate_workers", simulate)
        panel.refresh(doc.project)
        assert panel.planned_workers(doc.project) == (workers, 0)
        assert not panel.current.simulated and "simulated" not in panel.summary.text()
        assert panel.prediction.simulation is None


def test_a_simulation_the_launcher_would_refuse_is_said(qtbot, digits_project):
    page = _page(qtbot, digits_project)
    panel, doc = page.plan_panel, page.document
    doc.set_setting("multi_gpu.workers", 4)
    doc.set_setting("multi_gpu.simulate_workers", 6)
    panel.refresh(doc.project)
    assert not panel.error.isHidden()
    assert "refused" in panel.error.text()
    assert simulation_problem(6, 4) in panel.error.text().replace("&amp;", "&")
    assert "multiple of 4 (e.g. 4 or 8)" in panel.error.text()
    assert panel.planned_workers(doc.project) == (4, 0)  # below it, the plan of the 4 real workers
    assert panel.current.workers == 4 and "simulated" not in panel.summary.text()
    assert panel.prediction.simulation is None
    os.makedirs(SHOTS, exist_ok=True)
    qtbot.wait(100)
    page.grab().save(os.path.join(SHOTS, "config_plan_simulation_refused.png"))


def test_the_launcher_and_the_panel_share_one_rule():
    assert simulated_count(8, 1) == 8 and simulated_count(4, 4) == 0 and simulated_count(1, 1) == 0
    assert simulated_count(0, 2) == 0 and simulated_count(8, 2) == 8
    assert simulation_problem(8, 2) is None and simulation_problem(0, 3) is None and simulation_problem(1, 3) is None
    assert simulation_problem(2, 4).startswith("multi_gpu.simulate_workers 2 on 4 workers")
