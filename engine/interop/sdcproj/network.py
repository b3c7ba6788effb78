"""Import stage 2 for NNC desktop projects: one network's layers and links as graph nodes, with
registry parameters (each type's NNC properties and ``from_sdcproj`` hook come from its registration),
weights, initializers, learning-rate multipliers, loss targets and repeat blocks.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple, Union

from nnconsole.engine.layers import find_spec, get_spec
from nnconsole.engine.layers.nnc_values import as_float, convert_value, ints, resolve
from nnconsole.engine.project.model import Comment, Initializer

from nnconsole.engine.layers.types.inputs import GENERATORS, NONE

from nnconsole.engine.interop import mapping
from nnconsole.engine.interop.common import GeneratedTarget, generated_target_variable
from nnconsole.engine.interop.netgraph import Node, WeightInfo
from nnconsole.engine.interop.report import InteropError
from nnconsole.engine.interop.sdcproj.reader import SdcReader, layer_properties

_resolve = resolve
_ints = ints
_convert_value = convert_value


def _neutral(value: Optional[str]) -> bool:
    """An option left off (False/None/0/0,0): a property nnconsole lacks but that changes nothing."""
    if value is None:
        return True
    text = value.strip()
    if text in ("", "False", "false", "None"):
        return True
    try:
        return all(v == 0 for v in _ints(text))
    except ValueError:
        return False


def layer_params(rtype: str, name: str, props: Dict[str, str], unsupported: List[str],
                 arguments: Set[str] = frozenset()) -> Dict[str, Any]:
    """Registry parameters from NNC properties (unknown or unconvertible ones are listed).

    The type's registration says how: its ``from_sdcproj`` hook first (properties it handled are
    done), then its ``nnc_properties`` table, converted by each parameter's kind. A property written as
    the name of one of the network's ``arguments`` (Argument layers) is kept as that name (unit_expand)."""

    spec = get_spec(rtype)
    names = spec.nnc_properties
    params: Dict[str, Any] = {}
    try:
        handled = set(spec.from_sdcproj(name, props, params, unsupported)) if spec.from_sdcproj else set()
    except (ValueError, TypeError, KeyError, IndexError) as exc:  # a value the hook cannot read: named, not raised
        unsupported.append(f"layer '{name}' ({rtype}): its properties could not be read ({exc}); nnconsole's "
                           "defaults are used for those it computes")
        handled = set()
    for prop, pname in names.items():
        if prop not in props or prop in handled:
            continue
        raw = (props.get(prop) or "").strip()
        if raw.lstrip("*").strip() in arguments and (raw.startswith("*") or raw in arguments):
            params[pname] = raw  # NNC's macro '*ConvBS' or the bare name: the Unit using this network gives it
            continue
        value = _resolve(props, prop)
        if value is None or value.startswith("*"):
            unsupported.append(f"layer '{name}' ({rtype}): property {prop}={props[prop]} is computed by NNC and "
                               "cannot be read; nnconsole's default is used")
            continue
        try:
            params[pname] = _convert_value(spec.param(pname).kind, value)
        except (ValueError, KeyError) as exc:
            unsupported.append(f"layer '{name}' ({rtype}): property {prop}={value} not usable ({exc}); "
                               "nnconsole's default is used")
    weight_props = {f"{k}.{suffix}" for k in spec.weight_order
                    for suffix in ("File", "Initializer", "InitializerMultiplier", "LRateMultiplier")}
    for prop, value in props.items():
        if prop in names or prop in weight_props or prop in handled or prop in mapping.IGNORED_PROPERTIES:
            continue
        if prop.startswith(mapping.IGNORED_PROPERTY_PREFIXES) or _neutral(_resolve(props, prop)):
            continue
        unsupported.append(f"layer '{name}' ({rtype}): property {prop}={value} has no nnconsole equivalent")
    return params


def _weights(rtype: str, name: str, props: Dict[str, str], params: Dict[str, Any], scope_name: str,
             unsupported: List[str], arguments: Set[str] = frozenset()) -> Dict[str, WeightInfo]:
    spec = find_spec(rtype)
    keys = list(spec.weight_order if spec else ())
    if not params.get("with_bias", True):  # the bias a with_bias parameter turns off
        keys = [k for k in keys if k != "b"]
    pf_scope = spec.weight_scope if spec else ""
    out: Dict[str, WeightInfo] = {}
    for key in keys:
        info = WeightInfo(source_name=f"{scope_name}/{pf_scope}/{key}")
        # Parameter layers (Parameter, WorkingMemory) spell their one weight's settings without 'W.'
        prefix = "" if spec is not None and spec.group == "Parameter" else f"{key}."
        named = [s for s in ("Initializer", "InitializerMultiplier", "LRateMultiplier", "File")
                 if (props.get(f"{prefix}{s}") or "").strip().lstrip("*").strip() in arguments
                 and (props.get(f"{prefix}{s}") or "").strip().startswith("*")]
        for suffix in named:  # a layer's own parameter property naming an Argument: NNC's unit argument carries it
            unsupported.append(f"layer '{name}': {key}.{suffix}={props[prefix + suffix].strip()} names an Argument; "
                               f"nnconsole sets a parameter property through the Unit's argument "
                               f"'{name}.{key}.{suffix}' instead, so the layer's own value is used here")
        props = {k: v for k, v in props.items() if k not in {prefix + s for s in named}}
        kind_raw = _resolve(props, f"{prefix}Initializer")
        mult_raw = _resolve(props, f"{prefix}InitializerMultiplier")
        if kind_raw:
            kind = mapping.initializer_type(kind_raw.strip())
            if kind is None:
                unsupported.append(f"layer '{name}': {key}.Initializer={kind_raw} has no nnconsole equivalent; "
                                   "the layer's default initializer is used")
            else:
                m = as_float(mult_raw, 1.0 if kind != "Constant" else 0.0) if mult_raw is not None else None
                if kind == "Constant":
                    info.initializer = Initializer("Constant", 1.0, m if m is not None else 0.0)
                else:
                    info.initializer = Initializer(kind, m if m is not None else 1.0, 0.0)
        lr_raw = _resolve(props, f"{prefix}LRateMultiplier")
        if lr_raw is not None and lr_raw.strip() != "":
            info.lr_multiplier = as_float(lr_raw, 1.0)
        file_raw = _resolve(props, f"{prefix}File")
        if file_raw and file_raw.strip():
            unsupported.append(f"layer '{name}': {key}.File={file_raw} (weights loaded from a file) is not supported; "
                               "the weights start from the initializer")
        out[key] = info
    return out


def _loss_target(name: str, pin: str, props: Dict[str, str], unsupported: List[str], default_variable: str = "y"
                 ) -> Union[str, GeneratedTarget]:
    """A loss's target: the dataset variable of ``T.Dataset`` (``q`` for KLMultinomial), or, with a
    ``T.Generator``, the values that generator makes (a GAN's constant 1 and 0). A side pin's operand likewise
    (``R.Dataset``, ``R.Generator``); its variable, when neither names one, is ``<layer>_<pin>``."""
    kind = (_resolve(props, f"{pin}.Generator") or "None").strip()
    if kind in ("", NONE):
        named = (_resolve(props, f"{pin}.Dataset") or "").strip()
        return named or default_variable or f"{name}_{pin}"
    if kind not in GENERATORS:
        unsupported.append(f"loss '{name}': {pin}.Generator={kind} is not one of {', '.join(GENERATORS)}; the target "
                           "is generated as Constant")
        kind = "Constant"
    mult_raw = _resolve(props, f"{pin}.GeneratorMultiplier")
    try:
        multiplier = float(mult_raw) if mult_raw is not None and mult_raw.strip() else 1.0
    except ValueError:
        unsupported.append(f"loss '{name}': {pin}.GeneratorMultiplier={mult_raw} is not a number; 1 is used")
        multiplier = 1.0
    named = (_resolve(props, f"{pin}.Dataset") or "").strip()
    if named in ("", "y"):  # y: NNC's default T.Dataset, left as it was
        named = generated_target_variable(name) if pin in ("T", "q") else f"{name}_{pin}"
    return GeneratedTarget(named, kind, multiplier)


# ------------------------------------------------------------------------------------------ network
def _network_prefix(reader: SdcReader, network: str) -> str:
    if network and reader.section(f"{network}_Network_Global", required=False) is not None:
        return f"{network}_"
    return ""


def network_nodes(reader: SdcReader, network: str, unsupported: List[str], notes: List[str]
           ) -> Tuple[List[Node], Dict[str, Union[str, GeneratedTarget]], Dict[str, int]]:
    """Nodes of one network, loss targets (loss node -> dataset variable) and repeat counts (empty: a
    RepeatStart's Times is its parameter; blocks pair through the graph, see repeat_blocks)."""
    prefix = _network_prefix(reader, network)
    glob = reader.section(f"{prefix}Network_Global")
    n_layers = reader.count(glob, "NumLayer", None, reader.section_count, "sections")
    n_links = reader.count(glob, "NumLink", 0, reader.section_count, "sections")
    by_id: Dict[int, Node] = {}
    order: List[Node] = []
    targets: Dict[str, Union[str, GeneratedTarget]] = {}
    times: Dict[str, int] = {}
    taken: Set[str] = set()
    node_props: Dict[str, Dict[str, str]] = {}
    arguments = {(layer_properties(s).get("Name") or "").strip() for s in
                 (reader.section(f"{prefix}Layer_{i}") for i in range(n_layers)) if (s.get("Type") or "").strip() == "Argument"}
    for i in range(n_layers):
        s = reader.section(f"{prefix}Layer_{i}")
        lid = reader.int(s, "ID", i)
        ltype = (s.get("Type") or "").strip()
        props = layer_properties(s)
        name = (props.get("Name") or f"{ltype}_{i}").strip()
        if "/" in name:
            notes.append(f"layer name '{name}' contains '/', which nnabla reserves; renamed")
            name = name.replace("/", "_")
        if name in taken:
            raise InteropError(f"{reader.path}:{s.line} [{s.name}]: layer name '{name}' is used twice; rename one "
                               "in Neural Network Console")
        taken.add(name)
        position = (as_float(s.get("Position_0"), 0.0), as_float(s.get("Position_1"), 0.0))
        node = Node(name=name, type=ltype, position=position)
        rtype = mapping.registry_type(ltype)
        if ltype == "Comment":  # a canvas note, read by network_comments
            continue
        if ltype == "Input":  # its Generator and GeneratorMultiplier are parameters (data.generated)
            node.params = layer_params("Input", name, props, unsupported)
            if node.params.get("generator", NONE) != NONE:  # NNC ignores its Dataset (default x): named as the layer
                node.params["variable"] = name
        elif rtype is not None:
            node.params = layer_params(rtype, name, props, unsupported, arguments)
            scope = (_resolve(props, "ParameterScope") or name).strip() or name
            if scope != name and "/" not in scope:  # the user's own scope is kept, shared or not (as NNC names it)
                node.parameter_scope = scope
            node.weights = _weights(rtype, name, props, node.params, scope, unsupported, arguments)
            if get_spec(rtype).is_loss:  # the target pin is T, or q for KLMultinomial
                pin = "q" if "q.Dataset" in props else "T"
                targets[name] = _loss_target(name, pin, props, unsupported)
        elif ltype in mapping.PASS_THROUGH:
            pass
        else:
            node.params = {mapping.camel_to_snake(k): v for k, v in props.items()
                           if k not in mapping.IGNORED_PROPERTIES
                           and not k.startswith(mapping.IGNORED_PROPERTY_PREFIXES)}
        by_id[lid] = node
        order.append(node)
        node_props[name] = props
    links: List[Tuple[int, int, int, int, int]] = []
    for i in range(n_links):
        s = reader.section(f"{prefix}Link_{i}")
        src, dst = reader.int(s, "SourceLayerID"), reader.int(s, "DestLayerID")
        if src not in by_id or dst not in by_id:
            raise InteropError(f"{reader.path}:{s.line} [{s.name}]: link from layer ID {src} to {dst} names a layer "
                               "that does not exist; remove the link or the file is damaged")
        links.append((reader.int(s, "ID", i), src, reader.int(s, "SourcePinIndex", 0), dst,
                      reader.int(s, "DestPinIndex", 0)))
    side_links: List[Tuple[int, Node, Node]] = []
    for _, src, spin, dst, dpin in sorted(links):
        s_node, d_node = by_id[src], by_id[dst]
        slot = side_input_slot(d_node.type, dpin) if spin == 0 and dpin > 0 else None
        if slot is not None:  # Div2's R, ATan2's x, ClipGradByValue's min and Max: inputs after the main one
            side_links.append((slot, s_node, d_node))
            continue
        if spin != 0 or dpin != 0:
            unsupported.append(f"link {s_node.name} -> {d_node.name} uses side pin {spin}/{dpin} (e.g. a "
                               "Parameter layer feeding a weight); only main data links are imported")
            continue
        d_node.inputs.append(s_node.name)
    for _slot, s_node, d_node in sorted(side_links, key=lambda t: t[0]):
        d_node.inputs.append(s_node.name)
    for node in order:  # a loss whose target pin is linked reads that layer, not T.Dataset
        if node.name in targets and len(node.inputs) > 1:
            del targets[node.name]
    for node in order:  # an unlinked side pin reads its <pin>.Dataset or makes its <pin>.Generator's values
        operand = _unlinked_operand(node, node_props.get(node.name, {}), unsupported)
        if operand is not None:
            targets[node.name] = operand
    read = {str(n.params.get("variable") or n.name) for n in order if n.type == "Input"
            and n.params.get("generator", NONE) == NONE} | {t for t in targets.values() if isinstance(t, str)}
    for owner, target in list(targets.items()):  # a generated target never takes a name the dataset gives
        if isinstance(target, GeneratedTarget) and target.variable in read:
            targets[owner] = GeneratedTarget(generated_target_variable(owner), target.generator, target.multiplier)
    return order, targets, times


# Types whose side operand has a shape of its own (BroadcastTo's y is the target shape), not their input's
_OPERAND_SHAPE_NOT_INPUTS = {"BroadcastTo"}


def _unlinked_operand(node: Node, props: Dict[str, str], unsupported: List[str]
                      ) -> Optional[Union[str, GeneratedTarget]]:
    """The second operand of a layer with one side data pin (Sub2's R, ATan2's x...) that no link feeds: NNC
    fills it from ``<pin>.Generator`` (Sub2's default: Constant) or the dataset variable ``<pin>.Dataset``;
    None when the pin is linked or the layer has no such pin. The target Input is added with the losses'."""
    rtype = mapping.registry_type(node.type)
    spec = find_spec(rtype) if rtype else None
    if spec is None or spec.is_loss or len(_side_pins(node.type)) != 1 or len(node.inputs) != 1:
        return None
    pin = spec.input_names[1] if len(spec.input_names) > 1 else "R"
    if f"{pin}.Generator" not in props and f"{pin}.Dataset" not in props:
        return None
    if spec.type in _OPERAND_SHAPE_NOT_INPUTS:
        unsupported.append(f"layer '{node.name}' ({spec.type}): its {pin} pin is not linked and the shape of the "
                           f"operand NNC would make from {pin}.Generator/{pin}.Dataset is not known here; link an "
                           f"Input layer of that shape to the {pin} pin")
        return None
    return _loss_target(node.name, pin, props, unsupported, default_variable="")


def network_comments(reader: SdcReader, network: str) -> List[Comment]:
    """NNC's Comment layers of one network: their text (``\\n`` in the file is a line break) and position."""
    prefix = _network_prefix(reader, network)
    glob = reader.section(f"{prefix}Network_Global", required=False)
    out: List[Comment] = []
    for i in range(reader.count(glob, "NumLayer", 0, reader.section_count, "sections")):
        s = reader.section(f"{prefix}Layer_{i}", required=False)
        if s is None or (s.get("Type") or "").strip() != "Comment":
            continue
        text = layer_properties(s).get("Comment", "").replace("\\n", "\n")
        out.append(Comment(text=text, position=(as_float(s.get("Position_0"), 0.0), as_float(s.get("Position_1"),
                                                                                           0.0))))
    return out


def _side_pins(nnc_type: str) -> Tuple[int, ...]:
    """NNC's pin index of each input after the first, for a type that takes operands on side data pins: the
    registration's ``nnc_pins``, or pin 1 for a two-input type naming its inputs (R, x), a loss's target
    included (its T or q pin reads ``T.Dataset`` unless a layer is linked to it, as VAT's KLMultinomial's q)."""
    rtype = mapping.registry_type(nnc_type)
    spec = find_spec(rtype) if rtype else None
    if spec is None:
        return ()
    if spec.is_loss:
        return (1,) if spec.n_inputs[0] <= 2 <= (spec.n_inputs[1] or 2) else ()
    if spec.nnc_pins:
        return tuple(spec.nnc_pins)
    return (1,) if spec.n_inputs == (2, 2) and len(spec.input_names) == 2 else ()


def side_input_slot(nnc_type: str, pin: int) -> Optional[int]:
    """Which input (1, 2, ...) a link to side data pin ``pin`` of an ``nnc_type`` layer fills; None if none."""
    pins = _side_pins(nnc_type)
    return pins.index(pin) + 1 if pin in pins else None


def input_pin(nnc_type: str, k: int) -> int:
    """NNC's pin index for input ``k`` of an ``nnc_type`` layer (0: the main data pin)."""
    pins = _side_pins(nnc_type)
    return pins[k - 1] if 1 <= k <= len(pins) else 0
