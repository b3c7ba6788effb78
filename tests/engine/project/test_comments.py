"""NNC's Comment (issue 16): a canvas note kept in the project and through .sdcproj/.nntxt round trips, never in
the graph."""
from __future__ import annotations

from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.project.io import load_project, save_project
from nnconsole.engine.project.model import Comment, Datasets, Layer, Network, Project
from nnconsole.engine.network.layered_layout import GAP_X, NODE_WIDTH
from nnconsole.engine.network.shapes import infer_network
from tests.support.nnc_files import sdcproj_text
from nnconsole.engine.check.project_file import load_valid_project

NOTE = "Two lines:\nthe first Affine learns the features"


def _sdcproj(tmp_path):
    text = sdcproj_text([("x", "Input", {"Size": "4", "Dataset": "x"}, []),
                         ("a", "Affine", {"OutShape": "2"}, ["x"]),
                         ("note", "Comment", {"Comment": NOTE.replace("\n", "\\n")}, []),
                         ("loss", "SquaredError", {"T.Dataset": "y"}, ["a"])])
    path = tmp_path / "c.sdcproj"
    path.write_text(text, newline="")
    return str(path)


def test_an_nnc_comment_is_kept_as_a_canvas_note_outside_the_graph(tmp_path):
    result = import_file(_sdcproj(tmp_path))
    net = result.project.network
    # the helper places layer i at x = 20 i, boxes that touch: the import lays the layers out again and the
    # note goes right of them, level with the layer it was nearest to ('a', the first of two as near)
    right = max(layer.position[0] for layer in net.layers) + NODE_WIDTH + 2 * GAP_X
    assert net.comments == [Comment(NOTE, (right, net.layer("a").position[1]))]
    assert "note" not in net.names() and infer_network(net).ok
    assert not [n for n in result.notes + result.unsupported if "comment" in n.lower()]  # was 'comment dropped'


def test_comments_round_trip_through_sdcproj_nntxt_and_project_yaml(tmp_path):
    project = import_file(_sdcproj(tmp_path)).project
    placed = project.network.comments[0].position  # where the import's layout put it (the test above)
    project.network.comments.append(Comment("no position"))
    want = [Comment(NOTE, placed), Comment("no position", (0.0, 0.0))]
    out = tmp_path / "back.sdcproj"
    export_sdcproj(project, str(out))
    assert "Type=Comment" in out.read_text() and "\\nthe first Affine" in out.read_text()
    assert import_file(str(out)).project.network.comments == want
    project.datasets = Datasets()
    nntxt = tmp_path / "p.nntxt"
    export_nntxt(project, str(nntxt))
    assert import_file(str(nntxt)).project.network.comments == [Comment(NOTE, placed), Comment("no position")]
    path = tmp_path / "p.yaml"
    save_project(project, str(path))
    assert load_project(str(path)).network.comments == project.network.comments


def test_a_project_without_comments_is_saved_as_before(tmp_path):
    path = tmp_path / "p.yaml"
    save_project(Project(network=Network([Layer("x", "Input", params={"shape": [2], "variable": "x"})])), str(path))
    assert "comments" not in path.read_text()


def test_the_comments_of_every_network_round_trip_through_sdcproj(tmp_path):
    """A GAN's Generator network keeps its own notes through an .sdcproj export and import (NNC stores each
    network's Comment layers in that network's sections)."""
    import os

    from nnconsole.templates import template_path

    project = load_valid_project(os.path.join(template_path("gan_2d"), "project.yaml"))
    project.network.comments = [Comment("discriminator", (10.0, 20.0))]
    project.networks["Generator"].comments = [Comment("generator\nnote", (30.0, 40.0))]
    out = tmp_path / "gan.sdcproj"
    export_sdcproj(project, str(out))
    back = import_file(str(out)).project
    assert back.network.comments == [Comment("discriminator", (10.0, 20.0))]
    assert back.networks["Generator"].comments == [Comment("generator\nnote", (30.0, 40.0))]
