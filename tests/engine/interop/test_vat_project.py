"""An NNC-format VAT project (issue 26 item 4), written here in NNC's .sdcproj format: three networks (the
labelled cross entropy, the power iteration, the VAT loss), three optimizers, VATNoise with its Buf.Generator
and KLMultinomial's q pin linked to the perturbed prediction. It imports into a valid project, trains one
epoch with finite losses, and goes back to .sdcproj and .nntxt that import the same; nnabla's own loader reads
our .nntxt with one buffer shared by the networks and filled by the power-iteration optimizer."""
from __future__ import annotations

import csv

import numpy as np

from nnconsole.engine.check.project_file import load_valid_project
from nnconsole.engine.interop.files import export_nntxt, import_file
from nnconsole.engine.interop.sdcproj.exporter import export_sdcproj
from nnconsole.engine.layers import resolve_params
from nnconsole.engine.network.shared_params import weight_scope_of
from nnconsole.engine.project.io import save_project
from nnconsole.engine.rundir import store as runs
from tests.support.nnc_files import optimizer_section, sdcproj_networks_text
from tests.support.training import train_in_process

N_IN = 16


def _write_csv(path, rows: int, seed: int) -> None:
    rng = np.random.RandomState(seed)
    header = [f"x__{i}" for i in range(N_IN)] + ["y"] + [f"xu__{i}" for i in range(N_IN)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for _ in range(rows):
            w.writerow([f"{v:.4f}" for v in rng.rand(N_IN)] + [rng.randint(3)] + [f"{v:.4f}" for v in rng.rand(N_IN)])


def _classifier(src: str, suffix: str, frozen: bool) -> list:
    lr = {"W.LRateMultiplier": "0", "b.LRateMultiplier": "0"} if frozen else {}
    scope = (lambda name: {"ParameterScope": name}) if suffix else (lambda name: {})
    return [(f"fc1{suffix}", "Affine", dict(lr, OutShape="8", **scope("fc1")), [src]),
            (f"relu{suffix}", "ReLU", {}, [f"fc1{suffix}"]),
            (f"fc2{suffix}", "Affine", dict(lr, OutShape="3", **scope("fc2")), [f"relu{suffix}"])]


def _vat_network(eps: str, generator: str, frozen: bool) -> list:
    return ([("xu", "Input", {"Size": str(N_IN), "Dataset": "xu"}, []),
             ("buf", "Input", {"Size": str(N_IN), "Dataset": "buf"}, []),
             ("noise", "VATNoise", {"BaseAxis": "0", "Epsilon": eps, "Buf.Dataset": "buf", "Buf.Generator": generator,
                                    "Buf.GeneratorMultiplier": "1.0"}, ["buf"]),
             ("xu_noise", "Add2", {}, ["xu", "noise"])]
            + _classifier("xu", "", frozen)
            + [("p", "Softmax", {}, ["fc2"]), ("p_fixed", "Unlink", {}, ["p"])]
            + _classifier("xu_noise", "_noise", frozen)
            + [("q", "Softmax", {}, ["fc2_noise"]),
               ("kl", "KLMultinomial", {"BaseAxis": "0"}, ["p_fixed", ("q", 1)])])  # q on the loss's side pin


def nnc_vat_project(folder) -> str:
    """The .sdcproj of a VAT project in ``folder``, with its training and validation CSVs."""
    _write_csv(folder / "train.csv", 48, 0)
    _write_csv(folder / "valid.csv", 24, 1)
    main = [("x", "Input", {"Size": str(N_IN), "Dataset": "x"}, [])] + _classifier("x", "", False) + [
        ("loss", "SoftmaxCrossEntropy", {"T.Dataset": "y"}, ["fc2"])]
    tail = ["[Dataset]", "Num=2", "MainIndex=0",
            "[Dataset_0]", "Name=Training", "URI=train.csv", "Shuffle=1", "EnableCache=1", "ImageNormalization=1",
            "[Dataset_1]", "Name=Validation", "URI=valid.csv", "Shuffle=0", "EnableCache=1", "ImageNormalization=1",
            "[Config]", "MaxEpoch=1", "BatchSize=8", "TypeConfig=Float", "MonitorInterval=1", "NumOptimizer=3",
            "NumMonitor=0", "NumExecutor=0"]
    tail += optimizer_section(0, "Optimizer", "Main") + optimizer_section(1, "PowerIteration", "PowerIteration")
    tail += optimizer_section(2, "VAT", "VAT")
    path = folder / "vat.sdcproj"
    text = sdcproj_networks_text({"Main": main, "PowerIteration": _vat_network("1.0", "Normal", True),
                                  "VAT": _vat_network("0.5", "None", False)}, tail)
    path.write_text(text, newline="")
    return str(path)


def _meaning(project) -> list:
    """What the project computes: every network's layers (names, types, links, checked parameters, weight
    settings, the scope their weights live in: a scope equal to the name is the same as none) and the
    optimizers."""
    def layers(network) -> list:
        out = []
        for la in network.layers:
            p = resolve_params(la.type, la.params)
            if la.type == "Input":
                p["variable"] = p.get("variable") or la.name
            out.append((la.name, la.type, list(la.inputs), p, la.lr_multipliers or {}, weight_scope_of(la)))
        return sorted(out, key=str)
    nets = {"Main": layers(project.network), **{n: layers(net) for n, net in project.networks.items()}}
    return [nets, [(o.name, o.network, o.dataset) for o in project.optimizers]]


def _check_vat_import(result) -> None:
    assert not [u for u in result.unsupported if "noise" in u or "buf" in u or "pin" in u or "kl" in u
                or "enerator" in u], result.unsupported
    project = result.project
    assert list(project.networks) == ["PowerIteration", "VAT"]
    assert [(o.name, o.network) for o in project.optimizers] == [("PowerIteration", "PowerIteration"), ("VAT", "VAT")]
    power, vat = project.networks["PowerIteration"], project.networks["VAT"]
    assert resolve_params("VATNoise", power.layer("noise").params) == {
        "base_axis": 0, "eps": 1.0, "buffer": "buf", "buffer_generator": "Normal", "buffer_multiplier": 1.0}
    assert resolve_params("VATNoise", vat.layer("noise").params)["buffer_generator"] == "None"
    assert vat.layer("noise").params["eps"] == 0.5 and vat.layer("noise").inputs == ["buf"]
    assert vat.layer("kl").inputs == ["p_fixed", "q"]  # the linked q, not a dataset target
    assert power.layer("fc1_noise").lr_multipliers == {"W": 0.0, "b": 0.0}
    assert vat.layer("fc1_noise").parameter_scope == "fc1"


def test_nnc_vat_project_imports_trains_and_goes_back_to_nnc_and_nnabla_files(tmp_path):
    source = nnc_vat_project(tmp_path)
    result = import_file(source)
    _check_vat_import(result)
    saved = str(tmp_path / "project.yaml")
    save_project(result.project, saved, backup=False)
    project = load_valid_project(saved)  # valid: 'buf' is no dataset column, the shared shapes agree

    run_dir, losses = train_in_process(project, str(tmp_path / "results"))
    assert losses and np.all(np.isfinite(losses))
    extra = list(runs.iter_metrics(run_dir, "optimizer_loss"))
    assert {r["optimizer"] for r in extra} == {"PowerIteration", "VAT"}
    assert all(np.isfinite(r["loss"]) for r in extra)
    assert any(r["optimizer"] == "VAT" and r["loss"] > 0 for r in extra)  # the perturbation changed predictions

    sdc = tmp_path / "again.sdcproj"
    export_sdcproj(project, str(sdc))
    again = import_file(str(sdc))
    _check_vat_import(again)
    assert _meaning(again.project) == _meaning(project)

    nntxt = str(tmp_path / "vat.nntxt")
    assert not export_nntxt(project, nntxt).unsupported
    back = import_file(nntxt)
    _check_vat_import(back)
    assert _meaning(back.project) == _meaning(project)


def test_nnabla_loader_reads_the_exported_vat_nntxt_with_one_shared_buffer(tmp_path):
    """nnabla's loader builds every network of our file; the networks' 'buf' is one variable (an initialised
    Buffer, shared by name), the power-iteration optimizer fills it with normal noise and no dataset column is
    asked for it; VATNoise runs with base_axis 1 (NNC's 0 plus the batch axis)."""
    from nnabla.utils.load import load

    project = import_file(nnc_vat_project(tmp_path)).project
    save_project(project, str(tmp_path / "project.yaml"), backup=False)
    nntxt = str(tmp_path / "vat.nntxt")
    export_nntxt(load_valid_project(str(tmp_path / "project.yaml")), nntxt)
    info = load([nntxt], prepare_data_iterator=False, batch_size=8)
    opts = info.optimizers
    assert list(opts) == ["Optimizer", "PowerIteration", "VAT"]
    bufs = [opts[n].network.variables["buf"].variable_instance for n in ("PowerIteration", "VAT")]
    assert bufs[0] is bufs[1] and tuple(bufs[0].shape) == (8, N_IN)
    (generated,) = opts["PowerIteration"].generator_assign
    assert generated.name == "buf" and not opts["VAT"].generator_assign
    assert all(v.name != "buf" for o in opts.values() for v in o.dataset_assign)
    from google.protobuf import text_format
    from nnabla.utils import nnabla_pb2

    proto = text_format.Parse(open(nntxt).read(), nnabla_pb2.NNablaProtoBuf())
    assert sorted(proto.dataset[0].variable) == ["x", "xu", "y"]  # no column for the buffer
    vat = [f for n in proto.network for f in n.function if f.type == "VATNoise"]
    assert len(vat) == 2 and all(list(f.input) == ["buf", "buf"] and f.vat_noise_param.base_axis == 1 for f in vat)


def test_vat_loss_equals_nnabla_loaders_on_the_exported_file(tmp_path):
    """The VAT network's KLMultinomial per sample, from our graph and from nnabla's loader reading our .nntxt,
    on the same weights, unlabelled batch and buffer contents: equal within 1e-6, parameters alike."""
    import nnabla as nn
    from nnabla.utils.load import load

    from nnconsole.engine.runtime.graph import build_graph
    from nnconsole.engine.runtime.noise import NoiseBuffers

    project = import_file(nnc_vat_project(tmp_path)).project
    save_project(project, str(tmp_path / "project.yaml"), backup=False)
    project = load_valid_project(str(tmp_path / "project.yaml"))
    nntxt = str(tmp_path / "vat.nntxt")
    export_nntxt(project, nntxt)
    B, rng = 8, np.random.RandomState(3)
    xu = rng.rand(B, N_IN).astype(np.float32)
    direction = rng.randn(B, N_IN).astype(np.float32)
    nn.clear_parameters()
    try:
        ours = build_graph(project.networks["VAT"], B, "train", rng=np.random.RandomState(0),
                           noise=NoiseBuffers({"buf"}))
        weights = {k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()}
        ours.inputs["xu"].d = xu
        ours.outputs["buf"].d = direction
        ours.outputs["kl"].forward()
        mine = ours.outputs["kl"].d.copy()
        nn.clear_parameters()
        info = load([nntxt], prepare_data_iterator=False, batch_size=B)
        theirs = nn.get_parameters(grad_only=False)
        assert sorted(theirs) == sorted(weights)  # the same parameter names (fc1/affine/W ...)
        assert {k: v.shape for k, v in theirs.items()} == {k: v.shape for k, v in weights.items()}
        for k, v in theirs.items():
            v.d = weights[k]
        net = info.optimizers["VAT"].network
        net.variables["xu"].variable_instance.d = xu
        net.variables["buf"].variable_instance.d = direction
        kl = net.variables["kl"].variable_instance
        kl.forward()
        np.testing.assert_allclose(kl.d.reshape(mine.shape), mine, rtol=0, atol=1e-6)
        assert mine.max() > 0  # the perturbation changed the predictions: the comparison means something
    finally:
        nn.clear_parameters()
