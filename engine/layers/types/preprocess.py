"""Pre-process layers (NNC's Others (Pre Process)): data augmentation and input preparation.

The random ones (ImageAugmentation, RandomCrop, RandomFlip, RandomShift, RandomErase) draw new random
numbers every iteration while training and behave deterministically elsewhere, as NNC's SkipAtTest
says: identity at validation, evaluation and in exported runtime networks, except that a layer whose
output is smaller than its input (ImageAugmentation's or RandomCrop's shape) takes the centre crop
there. Their seed: a layer's own Seed, else the run's; build_graph mixes in the worker's rank and the
layer's name (``BuildContext.random_seed``), so every worker draws different numbers, reproducibly.
MeanSubtraction keeps a running mean (updated while training only); OneHot turns integer indices
into one-hot vectors. Shapes here exclude the batch axis; nnabla's base_axis is always 1 (NNC's
BaseAxis 0; another BaseAxis is reported on import).
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from nnconsole.engine.project.model import Initializer

from nnconsole.engine.layers.nntxt_codec import Unsupported, dims, f7, set_shape
from nnconsole.engine.layers.registry import LayerSpec, ParamSpec, Shape, ShapeError, fmt_shape, register

GROUP = "Pre Process"
_SEED = ParamSpec("seed", "int", -1, "Random seed; -1 follows the run's seed (each worker draws its own numbers).",
                  min=-1)
_SKIP = ParamSpec("skip_at_test", "bool", True, "Deterministic (identity or centre crop) at validation, evaluation "
                  "and in exported runtime networks (NNC's SkipAtTest); off: random there too.")


def _out_shape(type_name: str):
    """Output = ``shape`` (empty: the input's shape), which may not exceed the input (a crop)."""
    def rule(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
        x, want = tuple(ins[0]), tuple(p["shape"])
        if not want:
            return x
        if len(want) != len(x) or any(w > s for w, s in zip(want, x)):
            raise ShapeError(f"{type_name} shape {list(want)} must have one size per input axis, each at most the "
                             f"input's {fmt_shape(x)} (a crop); leave it empty to keep the input's shape")
        return want
    return rule


def _floats(p: Mapping[str, Any], name: str, type_name: str, count: int = 2) -> Tuple[float, ...]:
    """A parameter given as text '0.02,0.4' (NNC's FloatArray) as floats, or ShapeError."""
    try:
        values = tuple(float(v) for v in str(p[name]).replace(";", ",").split(",") if v.strip())
    except ValueError:
        values = ()
    if len(values) != count:
        raise ShapeError(f"{type_name} {name} must be {count} numbers like 0.02,0.4; got {p[name]!r}")
    return values


def _active(ctx: Any, p: Mapping[str, Any]) -> bool:
    return ctx.training or not p.get("skip_at_test", True)


def _centre_crop(x: Any, out: Shape) -> Any:
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    ins = tuple(x.shape[1:])
    if tuple(out) == ins:
        return F.identity(x)
    start = [(s - o) // 2 for s, o in zip(ins, out)]
    return F.slice(x, start, [a + o for a, o in zip(start, out)], [1] * len(out))


def _to_nntxt_test(f: Any, in_shapes: list, out_shape: Shape) -> None:
    """The deterministic form written to validation/runtime networks: Identity, or a centre-crop Slice."""
    ins = tuple(in_shapes[0])
    if tuple(out_shape) == ins:
        f.type = "Identity"
        return
    f.type = "Slice"
    start = [(s - o) // 2 for s, o in zip(ins, out_shape)]
    f.slice_param.start.extend(start)
    f.slice_param.stop.extend(a + o for a, o in zip(start, out_shape))
    f.slice_param.step.extend([1] * len(out_shape))


def _shape_from_sdcproj(name: str, props: Dict[str, str], params: Dict[str, Any], unsupported: list) -> set:
    """NNC's default Shape '*Input' (the input's shape) is the registry's empty shape."""
    return {"Shape"} if (props.get("Shape") or "").strip() == "*Input" else set()


def _random_layer(type_name: str, fn: str, doc: str, params: List[ParamSpec], call: Any, fields: Any,
                  read: Any, shape_rule: Any = None, skip: bool = True, **more: Any) -> None:
    """Register a random pre-process layer: ``call(F, x, p, out_shape, seed)`` while training, deterministic
    otherwise; ``fields(q, p, out_shape)`` fills the ``<fn>_param`` message of the training network's function
    and ``read(q)`` reads it back (nnabla's base_axis is always 1 here)."""
    rule = shape_rule or (lambda ins, p: tuple(ins[0]))

    def build(ctx, inputs, layer):
        import nnabla.functions as F  # deferred: nnabla stays out of the GUI
        p = ctx.params(layer)
        out = rule([tuple(inputs[0].shape[1:])], p)
        if _active(ctx, p):
            return call(F, inputs[0], p, out, ctx.random_seed(layer, p["seed"]))
        return _centre_crop(inputs[0], out)

    def to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
        if mode != "train" and p.get("skip_at_test", True):
            _to_nntxt_test(f, in_shapes, out_shape)
            return
        q = getattr(f, f"{fn}_param")
        fields(q, p, out_shape)
        q.seed = int(p["seed"])
        if hasattr(q, "base_axis"):
            q.base_axis = 1

    def from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
        if not f.HasField(f"{fn}_param"):
            return {}
        q = getattr(f, f"{fn}_param")
        if hasattr(q, "base_axis") and q.base_axis not in (0, 1):
            raise Unsupported(f"base_axis {q.base_axis} (nnconsole's {type_name} treats only the batch axis as "
                              "sample axes)")
        out = dict(read(q), seed=int(q.seed))
        if "shape" in out and in_shapes and in_shapes[0] is not None and list(out["shape"]) == list(in_shapes[0]):
            out["shape"] = []  # the input's shape: the registry's empty shape
        return out

    all_params = params + [_SEED] + ([_SKIP] if skip else [])
    overrides = more.pop("nnc_names", {})
    nnc = {"".join(w.capitalize() for w in ps.name.split("_")): ps.name for ps in all_params
           if ps.name not in overrides.values()}
    nnc.update(overrides)
    if "shape" in nnc.values():
        more.setdefault("from_sdcproj", _shape_from_sdcproj)
    register(LayerSpec(type=type_name, group=GROUP, doc=doc, params=all_params, n_inputs=(1, 1), output_shape=rule,
                       build=build, inference_differs=True, nnc_properties=nnc, to_nntxt=to_nntxt,
                       from_nntxt=from_nntxt, **more))


# ------------------------------------------------------------------------------- ImageAugmentation
_IA = [ParamSpec("shape", "ints", (), "Output size per axis (a random crop); empty keeps the input's shape.", min=1,
                 min_len=0, example=(3, 24, 24)),
       ParamSpec("pad", "ints", (0, 0), "Padding added around the image before cropping (height, width).", min=0),
       ParamSpec("min_scale", "float", 1.0, "Smallest random zoom.", min=0.0),
       ParamSpec("max_scale", "float", 1.0, "Largest random zoom.", min=0.0),
       ParamSpec("angle", "float", 0.0, "Largest random rotation in radians.", min=0.0),
       ParamSpec("aspect_ratio", "float", 1.0, "Largest random aspect-ratio change.", min=1.0),
       ParamSpec("distortion", "float", 0.0, "Strength of random distortion.", min=0.0),
       ParamSpec("flip_lr", "bool", False, "Flip left-right at random."),
       ParamSpec("flip_ud", "bool", False, "Flip up-down at random."),
       ParamSpec("brightness", "float", 0.0, "Largest random brightness offset.", min=0.0),
       ParamSpec("brightness_each", "bool", False, "A brightness offset per channel."),
       ParamSpec("contrast", "float", 1.0, "Largest random contrast factor.", min=0.0),
       ParamSpec("contrast_center", "float", 0.5, "Value contrast changes are centred on."),
       ParamSpec("contrast_each", "bool", False, "A contrast factor per channel."),
       ParamSpec("noise", "float", 0.0, "Standard deviation of added Gaussian noise.", min=0.0)]
_IA_ARGS = [ps.name for ps in _IA if ps.name != "shape"]


def _ia_call(F, x, p, out, seed):
    return F.image_augmentation(x, shape=(x.shape[0],) + tuple(out), seed=seed, **{k: p[k] for k in _IA_ARGS})


def _ia_fields(q, p, out):
    set_shape(q.shape, [-1] + list(out))
    for k in _IA_ARGS:
        if k == "pad":
            set_shape(q.pad, p[k])
        else:
            setattr(q, k, p[k])


def _ia_read(q) -> Dict[str, Any]:
    out: Dict[str, Any] = {"shape": dims(q.shape)[1:], "pad": dims(q.pad) or [0, 0]}
    for k in _IA_ARGS:
        if k != "pad":
            value = getattr(q, k)
            out[k] = value if isinstance(value, bool) else f7(value)
    return out


_random_layer("ImageAugmentation", "image_augmentation",
              "Random image augmentation while training: crop to shape, pad, scale, aspect ratio, rotation, "
              "distortion, flips, brightness, contrast and noise; identity (or the centre crop) at test.",
              _IA, _ia_call, _ia_fields, _ia_read, _out_shape("ImageAugmentation"),
              nnc_names={"FlipLR": "flip_lr", "FlipUD": "flip_ud"},
              examples=(({}, ((3, 8, 8),)), ({"shape": [3, 6, 6], "flip_lr": True}, ((3, 8, 8),))))

# ------------------------------------------------------------------------------------ RandomCrop
_random_layer("RandomCrop", "random_crop",
              "A random crop of size shape while training; the centre crop at validation, evaluation and runtime.",
              [ParamSpec("shape", "ints", (), "Crop size per axis; empty keeps the input's shape.", min=1, min_len=0,
                         example=(3, 24, 24))],
              lambda F, x, p, out, seed: F.random_crop(x, shape=tuple(out), seed=seed),
              lambda q, p, out: set_shape(q.shape, list(out)), lambda q: {"shape": dims(q.shape)},
              _out_shape("RandomCrop"), skip=False,
              examples=(({"shape": [1, 3, 3]}, ((2, 5, 5),)),))

# ------------------------------------------------------------------------------------ RandomFlip


def _flip_axes(p: Mapping[str, Any], ndim: int) -> List[int]:
    axes = list(p["axes"])
    for a in axes:
        if not 0 <= a < ndim:
            raise ShapeError(f"RandomFlip axis {a} is out of range for an input with {ndim} axes; use 0..{ndim - 1}")
    return axes


_random_layer("RandomFlip", "random_flip", "Flips the given axes at random while training; identity at test.",
              [ParamSpec("axes", "ints", (0,), "Axes to flip (without the batch axis; 0 = channels).", min=0)],
              lambda F, x, p, out, seed: F.random_flip(x, axes=[a + 1 for a in _flip_axes(p, len(out))], seed=seed),
              lambda q, p, out: q.axes.extend(a + 1 for a in p["axes"]),
              lambda q: {"axes": [a - 1 for a in q.axes]},
              lambda ins, p: (_flip_axes(p, len(ins[0])), tuple(ins[0]))[1],
              examples=(({"axes": [1, 2]}, ((3, 4, 4),)),))

# ----------------------------------------------------------------------------------- RandomShift
_random_layer("RandomShift", "random_shift",
              "Shifts the last axes by a random amount up to shift while training; identity at test.",
              [ParamSpec("shift", "ints", (0, 0), "Largest shift of each of the last axes.", min=0),
               ParamSpec("border_mode", "enum", "nearest", "How the uncovered border is filled.",
                         choices=("nearest", "reflect"))],
              lambda F, x, p, out, seed: F.random_shift(x, shifts=list(p["shift"]), border_mode=p["border_mode"],
                                                        seed=seed),
              lambda q, p, out: (q.shifts.extend(p["shift"]), setattr(q, "border_mode", p["border_mode"])),
              lambda q: {"shift": list(q.shifts), "border_mode": q.border_mode or "nearest"},
              examples=(({"shift": [1, 1]}, ((2, 4, 4),)),))

# ----------------------------------------------------------------------------------- RandomErase
_RE = [ParamSpec("prob", "float", 0.5, "Probability of erasing.", min=0.0, max=1.0),
       ParamSpec("area_ratios", "str", "0.02,0.4", "Smallest and largest erased area as a fraction of the image."),
       ParamSpec("aspect_ratios", "str", "0.3,3.3333", "Smallest and largest aspect ratio of the erased box."),
       ParamSpec("replacements", "str", "0.0,1.0", "Range of the random values written into the box."),
       ParamSpec("n", "int", 1, "Boxes erased per image.", min=1),
       ParamSpec("share", "bool", True, "One box for all channels."),
       ParamSpec("ste_fine_grained", "bool", True, "Straight-through gradient only outside the boxes.")]


def _erase_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    for name in ("area_ratios", "aspect_ratios", "replacements"):
        _floats(p, name, "RandomErase")
    if len(ins[0]) != 3:
        raise ShapeError(f"RandomErase needs images (channels, height, width), got {fmt_shape(ins[0])}")
    return tuple(ins[0])


def _erase_read(q) -> Dict[str, Any]:
    out: Dict[str, Any] = {"prob": f7(q.prob), "n": int(q.n) or 1, "share": bool(q.share),
                           "ste_fine_grained": bool(q.ste_fine_grained)}
    for name in ("area_ratios", "aspect_ratios", "replacements"):
        if len(getattr(q, name)) == 2:
            out[name] = ",".join(str(f7(v)) for v in getattr(q, name))
    return out


def _erase_call(F, x, p, out, seed):
    return F.random_erase(x, prob=p["prob"], area_ratios=_floats(p, "area_ratios", ""),
                          aspect_ratios=_floats(p, "aspect_ratios", ""), replacements=_floats(p, "replacements", ""),
                          n=p["n"], share=p["share"], ste_fine_grained=p["ste_fine_grained"], seed=seed)


def _erase_fields(q, p, out):
    q.prob, q.n, q.share, q.ste_fine_grained = float(p["prob"]), int(p["n"]), bool(p["share"]), bool(p["ste_fine_grained"])
    for name in ("area_ratios", "aspect_ratios", "replacements"):
        getattr(q, name).extend(_floats(p, name, ""))


_random_layer("RandomErase", "random_erase",
              "Erases random boxes (random erasing) while training; identity at test.", _RE, _erase_call,
              _erase_fields, _erase_read, _erase_shape, nnc_names={"STEFineGrained": "ste_fine_grained"},
              examples=(({}, ((3, 6, 6),)),))

# ------------------------------------------------------------------------------- MeanSubtraction


def _ms_build(ctx, inputs, layer):
    import nnabla.parametric_functions as PF  # deferred: nnabla stays out of the GUI
    p = ctx.params(layer)
    return PF.mean_subtraction(inputs[0], base_axis=1, update_running_mean=ctx.training and p["update_running_mean"])


def _ms_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    f.mean_subtraction_param.base_axis = 1
    f.mean_subtraction_param.update_running_mean = mode == "train" and bool(p["update_running_mean"])


def _ms_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    if f.HasField("mean_subtraction_param") and not f.mean_subtraction_param.update_running_mean:
        return {"update_running_mean": False}
    return {}


register(LayerSpec(
    type="MeanSubtraction", group=GROUP,
    doc="Subtracts the running mean of the samples seen while training (kept, not learned; the mean stops "
        "changing at validation, evaluation and runtime).",
    params=[ParamSpec("update_running_mean", "bool", True, "Update the running mean while training.")],
    n_inputs=(1, 1), output_shape=lambda ins, p: tuple(ins[0]), build=_ms_build,
    weight_shapes=lambda ins, p: {"mean": tuple(ins[0]), "t": (1,)},
    weights={"mean": Initializer("Constant", 1.0, 0.0), "t": Initializer("Constant", 1.0, 0.0)},
    non_trainable=("mean", "t"), nnc_properties={"UpdateRunningMean": "update_running_mean"},
    weight_scope="mean_subtraction", weight_order=("mean", "t"),
    to_nntxt=_ms_to_nntxt, from_nntxt=_ms_from_nntxt, examples=(({}, ((3, 4),)),),
))

# ---------------------------------------------------------------------------------------- OneHot


def _one_hot_shape(ins: List[Shape], p: Mapping[str, Any]) -> Shape:
    x, shape = tuple(ins[0]), tuple(p["shape"])
    if x[-1] != len(shape):
        raise ShapeError(f"OneHot input's last axis holds one index per output axis: {len(shape)} for shape "
                         f"{list(shape)}, but the input is {fmt_shape(x)}")
    return x[:-1] + shape


def _one_hot_build(ctx, inputs, layer):
    import nnabla.functions as F  # deferred: nnabla stays out of the GUI
    return F.one_hot(inputs[0], shape=tuple(ctx.params(layer)["shape"]))


def _one_hot_to_nntxt(f: Any, p: Mapping[str, Any], in_shapes: list, out_shape: Shape, mode: str) -> None:
    set_shape(f.one_hot_param.shape, p["shape"])


def _one_hot_from_nntxt(f: Any, in_shapes: list, weights: Mapping[str, list]) -> Dict[str, Any]:
    return {"shape": [int(d) for d in f.one_hot_param.shape.dim]}


register(LayerSpec(
    type="OneHot", group=GROUP,
    doc="Integer indices (last axis: one per output axis) to one-hot vectors of the given shape, e.g. a label "
        "(1,) to (10,).",
    params=[ParamSpec("shape", "ints", (100,), "Number of classes per index.", min=1, example=(10,))],
    n_inputs=(1, 1), output_shape=_one_hot_shape, build=_one_hot_build,
    macs=lambda ins, out, p: 0, nnc_properties={"Shape": "shape"},
    to_nntxt=_one_hot_to_nntxt, from_nntxt=_one_hot_from_nntxt,
    examples=(({"shape": [5]}, ((1,),)),),
))
