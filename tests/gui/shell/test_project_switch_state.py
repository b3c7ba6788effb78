"""Nothing of the previous project stays on screen after another one opens (issue 28 item 12): the Inference
view's data and Fit box, the trade-off graph's axes; and the status bar's link to a project with a running
run opens that project on its TRAINING tab."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.gui.support import copy_digits

from nnconsole.app.document.project_document import ProjectDocument
from nnconsole.app.evaluation.inference import DROP_HINT
from nnconsole.app.evaluation.page import create_page
from nnconsole.app.training.tradeoff import EMPTY_RANGE, TradeoffPlot
from tests.support.datasets import write_images
from tests.support.runs import make_image_run

pytestmark = pytest.mark.gui


def test_the_inference_view_starts_afresh_with_another_project(qtbot, tmp_path, template_project):
    run_dir, _w, _b = make_image_run(tmp_path, names=["cat", "dog", "bird"])
    document = ProjectDocument()
    document.load(str(tmp_path / "tiny.yaml"))
    page = create_page(document, None)
    qtbot.addWidget(page)
    page.show()
    assert page.show_run(run_dir, "inference")
    panel = page.inference
    write_images(tmp_path / "photos", count=2)
    panel.set_data([str(tmp_path / "photos")])
    panel.resize_box.setChecked(True)
    panel.resize_mode.setCurrentIndex(1)
    document.load(template_project)  # another project
    assert panel.data == [] and panel.data_label.text() == DROP_HINT and not panel.infer_button.isEnabled()
    assert not panel.resize_box.isChecked() and panel.resize_mode.currentIndex() == 0
    assert not panel.skip_box.isChecked() and panel.results is None


def row(name, error, macs):
    return SimpleNamespace(run_dir=f"/runs/{name}", name=name, label=name, best_error=error, total_macs=macs)


def test_the_tradeoff_graph_drops_the_previous_axes(qtbot):
    plot = TradeoffPlot()
    qtbot.addWidget(plot)
    plot.set_runs([row("a", 0.3, 5_000_000), row("b", 0.1, 9_000_000)])
    x_range, _y = plot.plot.getPlotItem().viewRange()
    assert x_range[1] > 1_000_000
    plot.set_runs([])  # the next project has no runs yet
    x_range, y_range = plot.plot.getPlotItem().viewRange()
    assert x_range == pytest.approx(list(EMPTY_RANGE)) and y_range == pytest.approx(list(EMPTY_RANGE))
    assert plot.points == [] and plot.labels == []


def test_the_status_bar_link_opens_the_project_on_training(make_window, tmp_path, template_project):
    other = copy_digits(str(tmp_path / "other"))
    window = make_window(tab_keys=("edit", "training"))
    assert window.files.open_path(template_project, ask_save=False)
    window.show_tab("edit")
    window.pages["training"]._open_project(other)
    assert window.document.path == other
    assert window.tabs.currentWidget() is window.pages["training"]
