"""Issue 30: CONFIG's switch multi_gpu.simulate_workers reaches the run the TRAINING tab starts. The tab passes
``--gpus N`` (its Workers box), and with ``--gpus`` the CLI trains real workers only unless told to simulate, so
the tab passes ``--simulate-workers`` too: the run is planned, logged and recorded as the simulated N."""
from __future__ import annotations

import json
import os

import pytest

from nnconsole.app.training.page import create_page
from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.project.io import save_project
from nnconsole.engine.rundir import store as runs
from nnconsole.engine.rundir.protocol import PLAN_FILE
from tests.gui.support import copy_digits, open_tab_page

pytestmark = pytest.mark.gui


@pytest.mark.slow
def test_the_run_button_trains_configs_simulated_workers(qtbot, tmp_path):
    project = copy_digits(str(tmp_path / "digits"), max_epoch=1)
    loaded = load_valid_project(project, check_datasets=False)
    loaded.multi_gpu.simulate_workers = 2
    save_project(loaded, project, backup=False)
    page = open_tab_page(qtbot, create_page, project)
    assert page.workers.value() == 1
    with qtbot.waitSignal(page.controller.run_finished, timeout=300_000) as blocker:
        assert page.start_run()
    run_dir, status, code = blocker.args
    assert (status, code) == ("finished", 0)
    with open(os.path.join(run_dir, PLAN_FILE)) as fh:
        plan = json.load(fh)
    assert plan["simulated"] is True and plan["workers"] == 2 and plan["logical_batch"] == 64
    assert plan["notes"][0].startswith("simulated: 2 workers run one after another in this one process")
    st = runs.read_status(run_dir)
    assert st.workers == 2 and st.logical_batch == 64
