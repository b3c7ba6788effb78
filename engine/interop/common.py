"""Helpers both importers and the exporter share: dataset paths, epoch lengths, loss targets, values."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from nnconsole.engine.layers.nnc_values import as_bool, as_float, as_int  # noqa: F401  (re-exported)
from nnconsole.engine.project.model import Layer, Network, Project

from nnconsole.engine.interop.netgraph import Node, to_layers, unique_name
from nnconsole.engine.layers import find_spec, resolve_params
from nnconsole.engine.network.shapes import infer_network
from nnconsole.engine.interop.mapping import registry_type
from nnconsole.engine.data.loading import peek_csv


def resolve_dataset(uri: str, base_dir: str, notes: List[str], what: str) -> str:
    """An absolute path for a dataset URI read from a file in ``base_dir``.

    Relative URIs are relative to that file's folder. A Windows path that does not exist here is
    looked up by its file name in that folder (NNC projects moved between machines). A path that
    cannot be found is kept as written and noted.
    """
    uri = (uri or "").strip()
    if not uri:
        return ""
    if "://" in uri:
        notes.append(f"{what} dataset '{uri}' is a remote URI; download it and set the path")
        return uri
    local = uri.replace("\\", os.sep) if os.sep != "\\" else uri
    candidates = [local if os.path.isabs(local) else os.path.join(base_dir, local)]
    if "\\" in uri or (len(uri) > 1 and uri[1] == ":"):
        candidates.append(os.path.join(base_dir, uri.replace("\\", "/").rsplit("/", 1)[-1]))
    for c in candidates:
        if os.path.isfile(c):
            return os.path.normpath(os.path.abspath(c))
    notes.append(f"{what} dataset '{uri}' was not found; set datasets.{what.lower()} to the CSV's path")
    return os.path.normpath(os.path.abspath(candidates[0])) if "\\" not in uri else uri


def peek_dataset(path: str) -> Optional[Any]:
    """The header and row count (``nnconsole.engine.data.loading.CsvPreview``, no rows) of a dataset CSV, or None when it
    cannot be read."""
    if not path or not os.path.isfile(path):
        return None
    try:
        return peek_csv(path, 0)
    except Exception:  # any unreadable file only means "unknown"
        return None


def preview_rows(preview: Optional[Any]) -> Optional[int]:
    """Number of data rows of a ``peek_dataset`` result, or None when the CSV could not be read."""
    return None if preview is None else int(preview.row_count)


def csv_rows(path: str) -> Optional[int]:
    """Number of data rows of a dataset CSV, or None when it cannot be read."""
    return preview_rows(peek_dataset(path))


def iterations_per_epoch(rows: Optional[int], batch_size: int) -> Optional[int]:
    """ceil(rows / batch), the engine's epoch length for one worker; None when rows is unknown."""
    if not rows or batch_size < 1:
        return None
    return max(1, math.ceil(rows / batch_size))


def relocate_datasets(project: Project, project_path: str) -> None:
    """Rewrite absolute dataset paths relative to ``project_path``'s folder (used before saving)."""
    folder = os.path.dirname(os.path.abspath(project_path))
    for key in ("training", "validation"):
        value = getattr(project.datasets, key)
        if value and os.path.isabs(value):
            try:  # relative only when the data shares more than the root with the project folder
                if os.path.commonpath([folder, os.path.abspath(value)]) not in (os.path.sep, ""):
                    setattr(project.datasets, key, os.path.relpath(value, folder))
            except ValueError:  # another drive on Windows
                pass


def label_target_shape(loss_type: str, pred_shape: Sequence[int], axis: int) -> Tuple[int, ...]:
    """The target shape a loss layer expects for a prediction shape (see nnconsole.engine.layers.types.loss)."""

    pred = tuple(int(s) for s in pred_shape)
    spec = find_spec(loss_type)
    if spec is not None and spec.class_index_target:
        a = axis + len(pred) if axis < 0 else axis
        if 0 <= a < len(pred):
            return pred[:a] + (1,) + pred[a + 1:]
    return pred


@dataclass(frozen=True)
class GeneratedTarget:
    """A loss target that a generator fills (NNC's ``T.Generator``, nnabla's ``generator_variable``): the target
    Input made for it generates ``variable`` (``Constant`` 1 for a GAN's real images) instead of reading it."""

    variable: str
    generator: str
    multiplier: float = 1.0


def generated_target_variable(loss: str) -> str:
    """The variable of a loss's generated target: ``<loss>_T`` (NNC gives it no name of its own)."""
    return f"{loss}_T"


def add_loss_targets(nodes: List[Node], targets: Dict[str, Union[str, GeneratedTarget]], unsupported: List[str],
                     library: Optional[Mapping[str, Network]] = None) -> List[Node]:
    """Give each loss node a target Input (its dataset variable, e.g. ``y``) as second input.

    ``targets`` maps loss node name -> dataset variable, or a GeneratedTarget (the Input generates it).
    Shapes come from shape inference on the rest of the network; losses sharing a variable share one Input, and a
    variable an Input of the network already reads is that Input.
    """

    if not targets:
        return nodes
    scratch: List[str] = []
    layers = to_layers([n for n in nodes if n.name not in targets], scratch, layout=False)
    info = infer_network(Network(layers=layers), library)  # library: the networks Unit layers use
    taken = {n.name for n in nodes}
    made: Dict[str, Tuple[str, Tuple[int, ...]]] = {}  # variable -> the Input reading it (one per variable)
    for n in nodes:  # an Input the network already has (an autoencoder's x is its own target)
        li = info.layers.get(n.name)
        if n.type == "Input" and li is not None and li.out_shape is not None:
            made.setdefault(str(n.params.get("variable") or n.name), (n.name, tuple(li.out_shape)))
    out: List[Node] = []
    for n in nodes:
        if n.name in targets:
            target = targets[n.name]
            generated = target if isinstance(target, GeneratedTarget) else None
            variable = (generated.variable if generated else target) or "y"
            pred = n.inputs[0] if n.inputs else None
            li = info.layers.get(pred) if pred else None
            rtype = registry_type(n.type) or n.type
            if li is None or li.out_shape is None:
                unsupported.append(f"loss '{n.name}': the shape of its prediction '{pred}' could not be "
                                   f"inferred, so its target Input '{variable}' has shape [1]; fix it by hand")
                shape: Tuple[int, ...] = (1,)
            else:
                spec = find_spec(rtype)
                axis = int(n.params.get("axis", spec.defaults().get("axis", -1))) \
                    if spec is not None and spec.class_index_target else -1
                shape = label_target_shape(rtype, li.out_shape, axis)
            if variable in made:
                target_name, made_shape = made[variable]
                if made_shape != shape:
                    unsupported.append(f"losses reading dataset variable '{variable}' expect different target "
                                       f"shapes {list(made_shape)} and {list(shape)}; '{n.name}' uses the first")
            else:
                target_name = unique_name(variable, taken)
                position = None
                if n.position is not None:
                    position = (n.position[0] + 240.0, n.position[1] - 48.0)
                params: Dict[str, Any] = {"shape": list(shape), "variable": variable}
                if generated:
                    params.update(generator=generated.generator, generator_multiplier=generated.multiplier)
                out.append(Node(name=target_name, type="Input", params=params, position=position))
                made[variable] = (target_name, shape)
            n.inputs = list(n.inputs[:1]) + [target_name]
        out.append(n)
    return out


def canonical_params(layer: Layer) -> Dict[str, Any]:
    """A layer's checked parameters with defaults filled in, lists instead of tuples (for YAML)."""

    try:
        params = resolve_params(layer.type, layer.params)
    except (KeyError, ValueError):
        return dict(layer.params)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}
