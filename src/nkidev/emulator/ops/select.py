"""Vector Engine selection with accumulation: range_select, select_reduce."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.alu import ALU, op_name
from nkidev.emulator.memory import raw, rows, scalar_or_vector, store
from nkidev.emulator.opdef import declare
from nkidev.emulator.ops.vector import _reduce_cmd, accumulate
from nkidev.emulator.tensor import NkiTensor, free_size

FP32_MIN = float(np.finfo(np.float32).min)
COMPARE = ("equal", "less", "less_equal", "greater", "greater_equal")


def _cmp_check(a, ctx, engine):
    for name in ("comp_op0", "comp_op1"):
        if op_name(getattr(a, name)) not in COMPARE:
            return f"{name} must be one of nl.{', nl.'.join(COMPARE)}", None
    if op_name(a.reduce_op) != "maximum":
        return "reduce_op must be nl.maximum", "pass reduce_op=nl.maximum"
    with np.errstate(over="ignore"):  # the immediate is an fp32: the usual literal -3.4028235e38 rounds to FP32_MIN
        immediate = np.float32(a.on_false_value)
    if immediate != np.float32(FP32_MIN):
        return f"on_false_value must be FP32_MIN ({FP32_MIN}), got {a.on_false_value}", "leave on_false_value at its default"
    if not a.on_true_tile.dtype.is_float:
        return f"on_true_tile must be a float dtype, got {a.on_true_tile.dtype}", None


RANGE_SELECT = declare(
    "range_select",
    "dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=reduce_cmd.reset_reduce, "
    "reduce_res=None, reduce_op=maximum, range_start=0, on_false_value=_FP32_MIN, name=None",
    ("vector",),
    "Keep elements whose free index + range_start satisfies comp_op0(., bound0) and comp_op1(., bound1), else FP32_MIN; "
    "max-reduce into the Vector accumulators.",
    writes=("dst", "reduce_res"),
    tiles=("dst", "on_true_tile", "bound0", "bound1", "reduce_res"),
    rules=(
        R.same_partitions("dst", "on_true_tile", "bound0", "bound1"),
        R.same_free_size("dst", "on_true_tile"),
        R.vector_operand("bound0"),
        R.vector_operand("bound1"),
        R.custom(
            "err_invalid_op",
            "comparisons are equal/less/less_equal/greater/greater_equal; reduce_op is "
            "maximum; on_false_value is FP32_MIN; on_true_tile is a float tile",
            _cmp_check,
        ),
    ),
    kind="compute",
    cost=costs.STREAMING,
)


@RANGE_SELECT.semantics_impl
def _range_select(a, ctx, engine):
    x = rows(a.on_true_tile)
    p, n = x.shape
    idx = (int(a.range_start) + np.arange(n, dtype=np.float32)).reshape(1, n)
    f0, f1 = ALU[op_name(a.comp_op0)].fn, ALU[op_name(a.comp_op1)].fn
    mask = (f0(idx, scalar_or_vector(a.bound0, p)) != 0) & (f1(idx, scalar_or_vector(a.bound1, p)) != 0)
    out = np.where(mask, x, np.float32(FP32_MIN)).astype(np.float32)
    store(a.dst, out)
    acc = accumulate(ctx.vec_acc, p, "maximum", _reduce_cmd(a), out)
    if a.reduce_res is not None:
        store(a.reduce_res, acc)


def _sr_check(a, ctx, engine):
    if op_name(a.reduce_op) != "maximum":
        return "reduce_op must be nl.maximum", "pass reduce_op=nl.maximum"
    if a.on_true.dtype.name in ("tfloat32", "int32", "uint32"):
        return f"on_true dtype {a.on_true.dtype} is not supported", None
    if not a.predicate.dtype.is_int:
        return f"predicate must be an integer tile, got {a.predicate.dtype}", "use uint8/uint16/int8/int16"
    if a.on_true.storage.kind == "psum" and a.predicate.storage.kind == "psum":
        return "on_true and predicate are both in PSUM", "copy one of them to SBUF"
    if a.reduce_res is not None and free_size(a.reduce_res) != 1:
        return f"reduce_res {a.reduce_res.shape} must be [P, 1]", None
    # reduce_res dtype must be a float type (select_reduce page, v2.32.0); an int16 reduce_res was accepted
    if a.reduce_res is not None and not a.reduce_res.dtype.is_float:
        return f"reduce_res is {a.reduce_res.dtype}; it must be a float dtype", "use an nl.float32 reduce_res"


SELECT_REDUCE = declare(
    "select_reduce",
    "dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=reduce_cmd.idle, reduce_op=maximum, reverse_pred=False, name=None",
    ("vector",),
    "dst = where(predicate, on_true, on_false) with an optional max-reduction per partition.",
    writes=("dst", "reduce_res"),
    tiles=("dst", "predicate", "on_true", "reduce_res"),
    rules=(
        R.same_partitions("dst", "predicate", "on_true"),
        R.same_free_size("dst", "predicate", "on_true"),
        R.vector_operand("on_false"),
        R.custom(
            "err_invalid_argument",
            "reduce_op is maximum; predicate is an integer tile; on_true and predicate not both in PSUM; reduce_res is a float [P, 1]",
            _sr_check,
        ),
    ),
    kind="compute",
    cost=costs.STREAMING,
)


@SELECT_REDUCE.semantics_impl
def _select_reduce(a, ctx, engine):
    x = rows(a.on_true)
    p = x.shape[0]
    pred = np.asarray(raw(a.predicate)).reshape(p, -1) != 0
    if a.reverse_pred:
        pred = ~pred
    other = scalar_or_vector(a.on_false, p) if not isinstance(a.on_false, NkiTensor) or free_size(a.on_false) == 1 else rows(a.on_false)
    out = np.where(pred, x, other).astype(np.float32)
    store(a.dst, out)
    cmd = _reduce_cmd(a)
    if cmd != "idle":
        acc = accumulate(ctx.vec_acc, p, "maximum", cmd, out)
    else:
        acc = out.max(axis=1)
    if a.reduce_res is not None:
        store(a.reduce_res, acc)
