"""Scalar Engine instructions: activation, activation_reduce, activate2."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.alu import ACTIVATIONS, ALU, IN_PLACE, op_name
from nkidev.emulator.context import warn
from nkidev.emulator.memory import result_into, rows, scalar_or_vector, store
from nkidev.emulator.opdef import declare
from nkidev.emulator.ops.vector import _SCRATCH_ELEMS, _apply, accumulate
from nkidev.emulator.tensor import NkiTensor, free_size, partitions


def _bias_check(a, ctx, engine):
    b = a.bias
    if b is None:
        return None
    if isinstance(b, NkiTensor):
        if b.dtype.name == "tfloat32" or not b.dtype.is_float:
            return f"bias dtype {b.dtype} is not supported", "use a float32/bfloat16/float16 bias vector"
        if free_size(b) != 1 or partitions(b) != partitions(a.data):
            return (
                f"bias {b.shape} must be a [{partitions(a.data)}, 1] vector",
                f"pass a ({partitions(a.data)}, 1) tile (one value per partition)",
            )
        return None
    if not isinstance(b, R.NUMBER):
        return f"bias must be a [P, 1] tile or a number, got {type(b).__name__}", None
    if not ctx.target.features.activation_scalar_bias:
        return "a scalar bias needs NeuronCore-v3 (trn2) or newer; trn1 takes a [P, 1] vector", "pass bias as a (P, 1) tile"


def _scale_shape(a, ctx, engine):
    s = a.scale
    if isinstance(s, NkiTensor) and (free_size(s) != 1 or partitions(s) != partitions(a.data)):
        return (
            f"scale {s.shape} must be a scalar or a [{partitions(a.data)}, 1] vector",
            f"pass a Python float or a ({partitions(a.data)}, 1) float32 tile",
        )
    if not isinstance(s, (NkiTensor, *R.NUMBER)):
        return f"scale must be a number or a [P, 1] tile, got {type(s).__name__}", None


def _scale_type(a, ctx, engine):
    s = a.scale
    if isinstance(s, NkiTensor) and s.dtype.name != "float32":
        return f"scale tile has dtype {s.dtype}, must be float32", "cast the scale vector to nl.float32"


def _reduce_check(a, ctx, engine):
    if getattr(a, "reduce_op", None) is not None and op_name(a.reduce_op) != "add":
        return f"reduce_op must be nl.add, got {op_name(a.reduce_op)}", "pass reduce_op=nl.add"
    r = getattr(a, "reduce_res", None)
    if r is not None and (free_size(r) != 1 or partitions(r) != partitions(a.data)):
        return f"reduce_res {r.shape} must be [{partitions(a.data)}, 1]", None


def _gpsimd_check(a, ctx, engine):
    # NKI 0.7: activation/activate2 take engine= (default scalar); GpSimd runs them on NeuronCore-v4+, and the
    # accumulator is only on the Scalar engine
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.activation.html)
    if engine != "gpsimd":
        return None
    if not ctx.target.features.gpsimd_activation:
        return (
            f"the GpSimd engine runs activations on NeuronCore-v4 (trn3) and newer, not {ctx.target.name}",
            "leave engine at nisa.engine.scalar",
        )
    if getattr(a, "reduce_res", None) is not None or getattr(a.reduce_cmd, "name", "idle") != "idle":
        return "the accumulator (reduce_cmd/reduce_res) is only on the Scalar engine", "run the reduction with engine=nisa.engine.scalar"


GPSIMD_RULE = R.custom(
    "err_invalid_argument",
    "engine=gpsimd needs NeuronCore-v4+ and no accumulator (reduce_cmd idle, no reduce_res)",
    _gpsimd_check,
)

ACT_RULES = (
    R.activation_op("op"),
    R.same_partitions("dst", "data"),
    R.same_free_size("dst", "data"),
    R.custom(
        "err_activation_bias_invalid_type",
        "bias is a [P, 1] vector of a float dtype other than tfloat32 (or a scalar on trn2+)",
        _bias_check,
    ),
    R.custom("err_activation_scale_scalar_or_vector", "scale is a scalar or a [P, 1] vector", _scale_shape),
    R.custom("err_activation_scale_invalid_type", "a scale vector is float32", _scale_type),
    R.custom("err_invalid_op", "reduce_op is nl.add; reduce_res is [P, 1]", _reduce_check),
)


def _act_attrs(a) -> dict:
    return {
        "func": op_name(a.op),
        "reads_accumulator": getattr(a, "reduce_res", None) is not None,
        "dtype": a.data.dtype.name,
        "dst_dtype": a.dst.dtype.name,
    }


def _activate(a, ctx) -> tuple[np.ndarray, bool]:
    """The activation's fp32 values, and whether they are dst's already (computed straight into it)."""
    x = rows(a.data)
    p = x.shape[0]
    # a widened copy (any input but fp32 storage) is ours: scale and bias go into it instead of new arrays
    owned = a.data.dtype.storage != np.float32 and a.data.dyn is None
    if not (isinstance(a.scale, int | float) and a.scale == 1.0):
        x = np.multiply(x, scalar_or_vector(a.scale, p), out=x if owned else None)
        owned = True
    if a.bias is not None:
        x = np.add(x, scalar_or_vector(a.bias, p), out=x if owned else None)
        owned = True
    name = op_name(a.op)
    if owned and x.dtype == np.float32 and name in IN_PLACE:
        # an element-wise ufunc over our own contiguous copy: into dst when it can take it (memory.result_into:
        # the loop NumPy runs in place over the copy, so the same bits), else over the copy (no new array)
        out = result_into(a.dst, x.shape, (x,)) if x.size >= _SCRATCH_ELEMS and x.ndim == 2 else None
        if out is not None:
            return ACTIVATIONS[name](x, 0.0, out), True
        return ACTIVATIONS[name](x, 0.0, x), False
    return ACTIVATIONS[name](x.astype(np.float32, copy=False), 0.0), False


ACTIVATION = declare(
    "activation",
    "dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle, engine=engine.scalar, name=None",
    ("scalar", "gpsimd"),
    "dst = op(data * scale + bias) on the Scalar Engine (or GpSimd, NeuronCore-v4+), with an optional add-reduction "
    "into the Scalar Engine's accumulators.",
    semantics="reduce_cmd: reset/reset_reduce zero the registers; reduce/reset_reduce add this output's row sums; "
    "reduce_res (if given) receives the registers. All math in fp32.",
    writes=("dst", "reduce_res"),
    tiles=("dst", "data", "reduce_res"),
    rules=ACT_RULES + (GPSIMD_RULE,),
    attrs=_act_attrs,
    overwrites=("dst", "reduce_res"),
    kind="compute",
    cost=costs.ACTIVATION,
    opcode="ACTIVATE",
)


@ACTIVATION.semantics_impl
def _activation(a, ctx, engine):
    y, stored = _activate(a, ctx)
    if not stored:
        store(a.dst, y)
    cmd = getattr(a.reduce_cmd, "name", "idle")
    p = y.shape[0]
    if cmd != "idle" or a.reduce_res is not None:
        if cmd == "idle" and a.reduce_res is not None and a.reduce_op is not None:
            warn(
                "warn_reduce_cmd_idle",
                "activation with reduce_res and reduce_cmd=idle reads the accumulator "
                "without adding this instruction's output; pass reduce_cmd=nisa.reduce_cmd.reset_reduce",
            )
        acc = accumulate(ctx.act_acc, p, "add", cmd, y)
        if a.reduce_res is not None:
            store(a.reduce_res, acc)


ACTIVATION_REDUCE = declare(
    "activation_reduce",
    "dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None",
    ("scalar",),
    "activation plus an add-reduction of its output along the free dims into reduce_res (reset_reduce semantics).",
    writes=("dst", "reduce_res"),
    tiles=("dst", "data", "reduce_res"),
    rules=ACT_RULES + (R.tensor_required("reduce_res"),),
    attrs=_act_attrs,
    overwrites=("dst", "reduce_res"),
    kind="compute",
    cost=costs.PLUS_MIN_II,
    opcode="ACTIVATE",
)


@ACTIVATION_REDUCE.semantics_impl
def _activation_reduce(a, ctx, engine):
    y, stored = _activate(a, ctx)
    if not stored:
        store(a.dst, y)
    store(a.reduce_res, accumulate(ctx.act_acc, y.shape[0], "add", "reset_reduce", y))


ACT2_PAIRS = {
    ("multiply", "add"),
    ("multiply", "subtract"),
    ("multiply", "bypass"),
    ("add", "bypass"),
    ("subtract", "bypass"),
    ("bypass", "bypass"),
}


# activate2's documented reduce ops; abs_max/abs_min reduced as add before, and nl.multiply was accepted
# (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.activate2.html)
ACT2_REDUCE = ("add", "maximum", "minimum", "abs_max", "abs_min")


def _act2_args_check(a, ctx, engine):
    # the page's constraints: reverse0 requires op0 to be set, reverse1 requires op1 (nl.bypass is no operation:
    # reversing it crashed nkidev); all immediates have the same dtype when both are tensors
    for flag, op in (("reverse0", "op0"), ("reverse1", "op1")):
        if getattr(a, flag) and op_name(getattr(a, op)) == "bypass":
            return f"{flag}=True with {op}=nl.bypass", f"set {op} to an operator or drop {flag}"
    if isinstance(a.imm0, NkiTensor) and isinstance(a.imm1, NkiTensor) and a.imm0.dtype != a.imm1.dtype:
        return f"imm0 is {a.imm0.dtype} but imm1 is {a.imm1.dtype}", "give both immediates one dtype"


def _act2_reduce_check(a, ctx, engine):
    if a.reduce_op is not None and op_name(a.reduce_op) not in ACT2_REDUCE:
        return f"reduce_op=nl.{op_name(a.reduce_op)} is not one of nl.{', nl.'.join(ACT2_REDUCE)}", None


def _abs_extreme(values: np.ndarray, largest: bool) -> np.ndarray:
    """Per row, the element of largest (smallest) magnitude, sign kept; as the fold acc = abs_max(acc, x) keeps
    the later element on a tie, the last of equal magnitudes wins."""
    mag = np.abs(values)[:, ::-1]
    last = values.shape[1] - 1 - (mag.argmax(axis=1) if largest else mag.argmin(axis=1))
    return np.take_along_axis(values, last[:, None], axis=1)[:, 0]


def _act2_accumulate(acc: np.ndarray, p: int, op: str, cmd: str, y: np.ndarray) -> np.ndarray:
    if op not in ("abs_max", "abs_min"):
        return accumulate(acc, p, op, cmd, y)
    fn = ALU[op].fn
    if cmd in ("reset", "reset_reduce"):
        acc[:p] = 0.0 if op == "abs_max" else np.inf  # the identities of the two folds
    if cmd in ("reduce", "reset_reduce"):
        acc[:p] = fn(acc[:p].astype(np.float32), _abs_extreme(y, op == "abs_max"))
    return acc[:p]


ACTIVATE2 = declare(
    "activate2",
    "dst, op, data, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False, reverse1=False, "
    "reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle, engine=engine.scalar, name=None",
    ("scalar", "gpsimd"),
    "op((data op0 imm0) op1 imm1) on the Scalar (or GpSimd) Engine with an optional Scalar Engine reduction (NeuronCore-v4).",
    writes=("dst", "reduce_res"),
    tiles=("dst", "data", "reduce_res"),
    rules=(
        R.activation_op("op"),
        R.same_partitions("dst", "data"),
        R.same_free_size("dst", "data"),
        R.vector_operand("imm0"),
        R.vector_operand("imm1"),
        R.custom(
            "err_invalid_op",
            "(op0, op1) is one of the six documented combinations",
            lambda a, ctx, engine: (
                None
                if (op_name(a.op0), op_name(a.op1)) in ACT2_PAIRS
                else f"(op0, op1) = ({op_name(a.op0)}, {op_name(a.op1)}) is not supported"
            ),
        ),
        R.custom("err_invalid_argument", "reverse0/reverse1 need op0/op1 set; tensor imm0 and imm1 share a dtype", _act2_args_check),
        R.custom("err_invalid_op", f"reduce_op is one of {', '.join(ACT2_REDUCE)}", _act2_reduce_check),
        GPSIMD_RULE,
    ),
    attrs=_act_attrs,
    overwrites=("dst", "reduce_res"),
    kind="compute",
    cost=costs.ACTIVATION,
    opcode="ACTIVATE",
)


@ACTIVATE2.semantics_impl
def _activate2(a, ctx, engine):
    x = rows(a.data)
    p = x.shape[0]
    y = _apply(a.op0, x, scalar_or_vector(a.imm0, p), a.reverse0)
    y = _apply(a.op1, y, scalar_or_vector(a.imm1, p), a.reverse1)
    alpha = float(a.relu_param) if not isinstance(a.relu_param, NkiTensor) else scalar_or_vector(a.relu_param, p)
    y = ACTIVATIONS[op_name(a.op)](y.astype(np.float32, copy=False), alpha)
    store(a.dst, y)
    cmd = getattr(a.reduce_cmd, "name", "idle")
    if cmd != "idle" and a.reduce_op is not None:
        acc = _act2_accumulate(ctx.act_acc, p, op_name(a.reduce_op), cmd, y)
        if a.reduce_res is not None:
            store(a.reduce_res, acc)
    elif a.reduce_res is not None:
        store(a.reduce_res, ctx.act_acc[:p])
