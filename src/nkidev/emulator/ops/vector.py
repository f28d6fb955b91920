"""Vector Engine instructions (several also run on Scalar or GpSimd): element-wise, reductions,
copies, statistics and top-8 search."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.alu import ALU, op_name
from nkidev.emulator.context import warn
from nkidev.emulator.dtypes import from_f32, scratch_f32
from nkidev.emulator.memory import f32, raw, read, result_into, rows, scalar_or_vector, store, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.tensor import NkiTensor, free_size, partitions


def _alu(op):
    return ALU[op_name(op)]


def _is_bitvec(op) -> bool:
    return _alu(op).kind.startswith("bitvec")


def _int_rows(t: NkiTensor) -> np.ndarray:
    x = np.asarray(raw(t))
    return x.reshape(x.shape[0] if x.ndim else 1, -1)


def _apply(op, x, operand, reverse: bool, dst: NkiTensor | None = None):
    """op(x, operand) (reversed: op(operand, x)); with dst, a large result may go straight into dst (None
    returned: stored, see _binary)."""
    alu = _alu(op)
    if alu.kind in ("unary", "bitvec_unary"):
        return alu.fn(x)
    if x.size >= _SCRATCH_ELEMS:
        return _binary(alu.fn, operand, x, dst) if reverse else _binary(alu.fn, x, operand, dst)
    return alu.fn(operand, x) if reverse else alu.fn(x, operand)


def _binary(fn, a, b, dst: NkiTensor | None = None):
    """fn(a, b); a large fp32 ufunc result of fp32 operands of one shape (or one a scalar) goes into a recycled
    buffer (dtypes.scratch_f32): the same bits, without a fresh allocation's page faults. With dst, it goes
    straight into dst's values where memory.result_into allows (the same bits again, without store()'s
    copy): then the result is stored and None is returned."""
    if fn.__class__ is np.ufunc and getattr(a, "dtype", None) == _F32 and getattr(b, "dtype", None) == _F32:
        big, other = (a, b) if a.size >= b.size else (b, a)
        shape = big.shape
        if other.ndim <= big.ndim and (other.shape == shape or other.size == 1 or other.shape == shape[:-1] + (1,)):
            out = result_into(dst, shape, (a, b)) if dst is not None and len(shape) == 2 else None
            if out is not None:
                fn(a, b, out=out)
                return None
            return fn(a, b, out=scratch_f32(shape))  # the shape fn(a, b) has
    return fn(a, b)


def _store_result(dst: NkiTensor, values) -> None:
    """store() a result that _binary did not already write into dst."""
    if values is not None:
        store(dst, values)


_SCRATCH_ELEMS = 1 << 14
_F32 = np.dtype(np.float32)


def _int_operand(v, p: int, like: np.ndarray):
    if isinstance(v, NkiTensor):
        return np.asarray(raw(v)).reshape(p, 1).astype(like.dtype)
    return np.asarray(int(v)).astype(like.dtype)


# ---------------------------------------------------------------- tensor_tensor


def _tt_engine(a, ctx) -> str:
    if op_name(a.op) == "power":
        return "gpsimd"
    if op_name(a.op) in ALU and _is_bitvec(a.op):
        return "vector"  # the int32 GpSimd default is for arithmetic ops (tensor_tensor page)
    ts = (a.dst, a.data1, a.data2)
    if all(t.dtype.name in ("int32", "uint32") for t in ts) and all(t.storage.kind == "sbuf" for t in ts):
        return "gpsimd"  # native 32-bit integer arithmetic
    return "vector"


TENSOR_TENSOR = declare(
    "tensor_tensor",
    "dst, data1, data2, op, engine=engine.unknown, name=None",
    ("vector", "gpsimd"),
    "Element-wise binary op of two tiles with equal partitions and elements per partition.",
    semantics="dst = op(data1, data2), in fp32 for arithmetic ops, on bit patterns for bitvec ops.",
    tiles=("dst", "data1", "data2"),
    rules=(
        R.alu_op("op", ("arith", "bitvec")),
        R.same_partitions("dst", "data1", "data2"),
        R.same_free_size("dst", "data1", "data2"),
        R.not_both_psum("data1", "data2"),
        R.bitvec_needs_int(("op",), ("dst", "data1", "data2")),
    ),
    choose_engine=_tt_engine,
    attrs=lambda a: {"op": op_name(a.op)},
    overwrites=("dst",),
    kind="compute",
    cost=costs.TENSOR_TENSOR,
    perf_modes=costs.TENSOR_TENSOR_MODES,
)


@TENSOR_TENSOR.semantics_impl
def _tensor_tensor(a, ctx, engine):
    if _is_bitvec(a.op):
        _bitvec_engine_warning(a, engine)
        x, y = _int_rows(a.data1), _int_rows(a.data2).astype(_int_rows(a.data1).dtype)
        store_raw(a.dst, _alu(a.op).fn(x, y).astype(a.dst.dtype.storage))
        return
    if engine == "gpsimd" and all(t.dtype.is_int for t in (a.dst, a.data1, a.data2)):
        x = np.asarray(raw(a.data1)).astype(np.float64).reshape(a.data1.shape[0], -1)
        y = np.asarray(raw(a.data2)).astype(np.float64).reshape(x.shape)
        # from_f32 rounds and saturates in float64: an fp32 result (divide, mod, power compute in fp32) clipped in
        # fp32 keeps 2**31 (int32 max does not fit fp32) and then wrapped to -2**31
        store_raw(a.dst, from_f32(np.asarray(_alu(a.op).fn(x, y)), a.dst.dtype))
        return
    x, y = rows(a.data1), rows(a.data2)
    if x.size >= _SCRATCH_ELEMS:
        _store_result(a.dst, _binary(_alu(a.op).fn, x, y, a.dst))
    else:
        store(a.dst, _alu(a.op).fn(x, y))


# ---------------------------------------------------------------- tensor_scalar


def _ts_check(a, ctx, engine):
    ops = [op_name(a.op0)] + ([op_name(a.op1)] if a.op1 is not None else [])
    kinds = {ALU[o].kind.startswith("bitvec") for o in ops if o in ALU}
    if len(kinds) > 1:
        return "op0 and op1 must both be bitvec or both arithmetic", None
    if a.op1 is None and a.operand1 is not None:
        return "operand1 is set but op1 is None", "pass op1 or drop operand1"
    if True in kinds:
        # a bitvec op on engine=scalar/gpsimd: the page says it must run on the Vector Engine, but the NKI 0.8
        # announcement says only a release after 0.8 rejects it (0.7 accepts it): a warning in the semantics
        engine = "vector"
    # the engine parameter: gpsimd is "only allowed for rsqrt"; arithmetic operand0/operand1 must be float32
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.tensor_scalar.html)
    if engine == "gpsimd" and ops != ["rsqrt"]:
        return "engine=gpsimd is only allowed for rsqrt", "use the vector or scalar engine"
    if engine == "scalar" and not ctx.target.scalar_tensor_scalar(ops[0], ops[1] if len(ops) > 1 else None):
        allowed = ", ".join(ctx.target.features.scalar_tensor_scalar_ops)
        return (f"ScalarE on {ctx.target.name} supports only {allowed} in tensor_scalar", "run it on the vector engine")
    if True in kinds:
        for name in ("operand0", "operand1"):
            v = getattr(a, name)
            if v is not None and not isinstance(v, NkiTensor) and not (np.isfinite(float(v)) and abs(float(v)) < 2**63):
                return f"{name}={v!r} is not an integer a bitvec operator can use", f"pass {name} as an int"
    if False in kinds:
        for name in ("operand0", "operand1"):
            v = getattr(a, name)
            if isinstance(v, NkiTensor) and v.dtype.name != "float32":
                return f"{name} is {v.dtype}; arithmetic operands must be float32", f"cast {name} to nl.float32"


def _unary_operand_check(a, ctx, engine):
    # operand0 must be None or 0 when op0 is a unary operator
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.tensor_scalar.html);
    # any other value was silently ignored (nl.abs with operand0=5.0 computed abs(x))
    if _alu(a.op0).kind in ("unary", "bitvec_unary"):
        v = a.operand0
        if isinstance(v, NkiTensor) or (v is not None and not (isinstance(v, int | float | np.number) and float(v) == 0.0)):
            shown = v.name if isinstance(v, NkiTensor) else repr(v)
            return f"op0=nl.{op_name(a.op0)} is unary but operand0={shown}", "pass operand0=None (or 0)"


def _bitvec_engine_warning(a, engine):
    explicit = getattr(a.engine, "name", a.engine)
    if explicit in ("scalar", "gpsimd"):
        # https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/announcements/neuron2.x/announce-intent-eos-nki-virtualregister-lnc-apis.html
        warn(
            "warn_bitvec_engine",
            f"a bitvec operator with engine={explicit}: the ISA page says bitvec operators run on the Vector Engine, "
            "and a release after NKI 0.8 rejects this engine; pass engine=nisa.engine.vector or drop engine",
        )


TENSOR_SCALAR = declare(
    "tensor_scalar",
    "dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, engine=engine.unknown, name=None",
    ("vector", "scalar", "gpsimd"),
    "Apply up to two ops with scalar or [P, 1] operands broadcast along the free dims: (data op0 operand0) op1 operand1.",
    semantics="reverse0/reverse1 swap the operand order of op0/op1; one or two ops cost the same.",
    tiles=("dst", "data"),
    rules=(
        R.alu_op("op0"),
        R.alu_op("op1", optional=True),
        R.same_partitions("dst", "data"),
        R.same_free_size("dst", "data"),
        R.vector_operand("operand0"),
        R.vector_operand("operand1"),
        R.custom(
            "err_invalid_op",
            "op0/op1 of one kind; engine limits (gpsimd only rsqrt; trn2 ScalarE only multiply/add); arithmetic operands are float32",
            _ts_check,
        ),
        R.bitvec_needs_int(("op0", "op1"), ("dst", "data")),
        R.custom("err_invalid_argument", "operand0 is None or 0 when op0 is unary", _unary_operand_check),
    ),
    attrs=lambda a: {"op0": op_name(a.op0), "op1": op_name(a.op1) if a.op1 is not None else None},
    overwrites=("dst",),
    kind="compute",
    cost=costs.PERF_STREAMING,
    opcode="SCALAR",
    perf_modes=costs.COPY_MODES,
)


@TENSOR_SCALAR.semantics_impl
def _tensor_scalar(a, ctx, engine):
    if _is_bitvec(a.op0):
        _bitvec_engine_warning(a, engine)
        x = _int_rows(a.data)
        p = x.shape[0]
        y = _apply(a.op0, x, _int_operand(a.operand0, p, x) if a.operand0 is not None else None, a.reverse0)
        if a.op1 is not None:
            y = _apply(a.op1, y, _int_operand(a.operand1, p, y), a.reverse1)
        store_raw(a.dst, y.astype(a.dst.dtype.storage))
        return
    x = rows(a.data)
    p = x.shape[0]
    operand0 = scalar_or_vector(a.operand0 if a.operand0 is not None else 0.0, p)
    if a.op1 is None:  # the last op's result may go straight into dst (an earlier one might overwrite operand1)
        _store_result(a.dst, _apply(a.op0, x, operand0, a.reverse0, a.dst))
        return
    y = _apply(a.op0, x, operand0, a.reverse0)
    _store_result(a.dst, _apply(a.op1, y, scalar_or_vector(a.operand1 if a.operand1 is not None else 0.0, p), a.reverse1, a.dst))


# ---------------------------------------------------------------- reductions


def _axes(a) -> tuple[int, ...]:
    axis = a.axis
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    return tuple(sorted(int(x) % a.data.ndim for x in axes))


def _reduce_check(a, ctx, engine):
    nd = a.data.ndim
    try:
        axes = _axes(a)
    except (TypeError, ValueError):
        return f"axis={a.axis!r}", "pass an int or a tuple of ints"
    if not axes or 0 in axes or axes != tuple(range(axes[0], nd)):
        return (
            f"axis={a.axis} on a {nd}-d tile; reduction axes must be the last contiguous free dims and never axis 0",
            f"use axis={nd - 1} or a tuple ending at {nd - 1}",
        )
    kept = int(np.prod([a.data.shape[i] for i in range(1, nd) if i not in axes]))
    if free_size(a.dst) != kept:
        return f"dst {a.dst.shape} must hold {kept} elements per partition after reducing {axes}", None


def _reduce_negate_check(a, ctx, engine):
    # negate applies only to arithmetic ops
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.tensor_reduce.html);
    # with a bitvec op it was silently dropped
    if a.negate and _is_bitvec(a.op):
        return f"negate=True with the bitvec op nl.{op_name(a.op)}", "negate only applies to arithmetic ops; drop negate"


TENSOR_REDUCE = declare(
    "tensor_reduce",
    "dst, op, data, axis, negate=False, keepdims=False, name=None",
    ("vector",),
    "Reduce the trailing free axes of a tile on the Vector Engine.",
    semantics="dst = op.reduce(data, axis) (x -1 if negate), fp32 for arithmetic ops.",
    tiles=("dst", "data"),
    rules=(
        R.alu_op("op", ("arith", "bitvec"), reducible=True),
        R.same_partitions("dst", "data"),
        R.custom("err_reduce_axis_invalid", "axis lists the last contiguous free dims (never 0); dst holds the rest", _reduce_check),
        R.custom("err_invalid_argument", "negate only with an arithmetic op", _reduce_negate_check),
    ),
    attrs=lambda a: {"op": op_name(a.op), "negate": bool(a.negate)},
    overwrites=("dst",),
    kind="compute",
    cost=costs.TENSOR_REDUCE,
    opcode="REDUCE",
)


@TENSOR_REDUCE.semantics_impl
def _tensor_reduce(a, ctx, engine):
    alu = _alu(a.op)
    axes = _axes(a)
    if alu.kind == "bitvec":
        store_raw(a.dst, alu.reduce(np.asarray(raw(a.data)), axes).astype(a.dst.dtype.storage))
        return
    res = alu.reduce(f32(a.data), axes)
    store(a.dst, -res if a.negate else res)


# the NKI 0.7 page lists bitwise_xor too and names the averaging op nl.mean
# (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.tensor_partition_reduce.html);
# the 0.6 page (v2.32.0) lists the other five, and says average. The rule cache is per target, not per version, so
# both versions accept all six (the GpSimd instruction is the same).
PARTITION_OPS = ("add", "average", "maximum", "bitwise_or", "bitwise_and", "bitwise_xor")


def _partition_op(op) -> str | None:
    """The ALU key of a partition-reduce op: nl.mean (a reduction function, not an ALU op specifier) is the average."""
    key = op_name(op)
    if key is None and getattr(op, "__name__", None) == "mean":
        return "average"
    return key


TENSOR_PARTITION_REDUCE = declare(
    "tensor_partition_reduce",
    "dst, op, data, name=None",
    ("gpsimd",),
    "Reduce across partitions with the GpSimd Engine (add, average/mean, max, bitwise_or, bitwise_and, bitwise_xor).",
    semantics="dst[0, ...] = op.reduce(data, axis=0)",
    tiles=("dst", "data"),
    rules=(
        R.custom(
            "err_invalid_op",
            f"op is one of {', '.join(PARTITION_OPS)} (nl.mean is average)",
            lambda a, ctx, engine: (
                None
                if _partition_op(a.op) in PARTITION_OPS
                else (f"op {_partition_op(a.op)} cannot reduce partitions", f"use one of nl.{', nl.'.join(PARTITION_OPS)}")
            ),
        ),
        R.same_free_size("dst", "data"),
        R.custom(
            "err_shape_mismatch",
            "dst has one partition",
            lambda a, ctx, engine: None if partitions(a.dst) == 1 else f"dst {a.dst.shape} must have 1 partition",
        ),
    ),
    attrs=lambda a: {"op": _partition_op(a.op)},
    overwrites=("dst",),
    kind="compute",
    cost=costs.GPSIMD_STREAMING,
)


@TENSOR_PARTITION_REDUCE.semantics_impl
def _partition_reduce(a, ctx, engine):
    alu = ALU[_partition_op(a.op)]
    if alu.kind == "bitvec":
        store_raw(a.dst, alu.reduce(_int_rows(a.data), 0).astype(a.dst.dtype.storage))
    else:
        store(a.dst, alu.reduce(rows(a.data), 0))


# ---------------------------------------------------------------- scans and fused ops

TENSOR_TENSOR_SCAN = declare(
    "tensor_tensor_scan",
    "dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None",
    ("vector",),
    "Scan along the free dim: out[i] = op1(op0(data0[i], out[i-1]), data1[i]), out[-1] = initial.",
    semantics="reverse0 makes data0 the rhs of op0; reverse1 makes data1 the lhs of op1.",
    tiles=("dst", "data0", "data1"),
    rules=(
        R.alu_op("op0", ("arith",)),
        R.alu_op("op1", ("arith",)),
        R.same_partitions("dst", "data0", "data1"),
        R.same_free_size("dst", "data0", "data1"),
        R.not_both_psum("data0", "data1"),
        R.vector_operand("initial"),
    ),
    attrs=lambda a: {"op0": op_name(a.op0), "op1": op_name(a.op1)},
    overwrites=("dst",),
    kind="compute",
    cost=costs.SCAN,
)


@TENSOR_TENSOR_SCAN.semantics_impl
def _scan(a, ctx, engine):
    x0, x1 = rows(a.data0), rows(a.data1)
    p, n = x0.shape
    f0, f1 = _alu(a.op0).fn, _alu(a.op1).fn
    prev = np.broadcast_to(scalar_or_vector(a.initial, p), (p, 1)).reshape(p).astype(np.float32)
    out = np.empty((p, n), np.float32)
    for i in range(n):  # a true recurrence: each column needs the previous one
        t = f0(prev, x0[:, i]) if a.reverse0 else f0(x0[:, i], prev)
        prev = f1(x1[:, i], t) if a.reverse1 else f1(t, x1[:, i])
        out[:, i] = prev
    store(a.dst, out)


SCALAR_TENSOR_TENSOR = declare(
    "scalar_tensor_tensor",
    "dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None",
    ("vector",),
    "(data op0 operand0) op1 operand1 with a scalar/[P, 1] operand0 and a full-tile operand1.",
    tiles=("dst", "data", "operand1"),
    rules=(
        R.alu_op("op0", ("arith", "unary")),
        R.alu_op("op1", ("arith",)),
        R.tensor_required("operand1"),
        R.same_partitions("dst", "data", "operand1"),
        R.same_free_size("dst", "data", "operand1"),
        R.not_both_psum("data", "operand1"),
        R.vector_operand("operand0"),
    ),
    attrs=lambda a: {"op0": op_name(a.op0), "op1": op_name(a.op1)},
    overwrites=("dst",),
    kind="compute",
    cost=costs.SCALAR_TENSOR_TENSOR,
)


@SCALAR_TENSOR_TENSOR.semantics_impl
def _stt(a, ctx, engine):
    x = rows(a.data)
    t = _apply(a.op0, x, scalar_or_vector(a.operand0, x.shape[0]), a.reverse0)
    _store_result(a.dst, _apply(a.op1, t, rows(a.operand1), a.reverse1, a.dst))  # op1's result may go straight into dst


REDUCE_OPS = ("add", "multiply", "maximum", "minimum")


def _reduce_cmd(a) -> str:
    return getattr(getattr(a, "reduce_cmd", None), "name", "idle")


def accumulate(acc: np.ndarray, p: int, op: str, cmd: str, values: np.ndarray | None, init=None) -> np.ndarray:
    """Update engine accumulator registers acc[:p] per reduce_cmd; returns acc[:p]."""
    alu = ALU[op]
    if cmd in ("reset", "reset_reduce"):
        acc[:p] = alu.identity
    elif cmd == "load_reduce":
        acc[:p] = np.broadcast_to(scalar_or_vector(init if init is not None else 0.0, p), (p, 1)).reshape(p)
    if cmd in ("reduce", "reset_reduce", "load_reduce") and values is not None:
        acc[:p] = alu.fn(acc[:p], alu.reduce(values, 1))
    return acc[:p]


def _tsr_init_check(a, ctx, engine):
    # reduce_init should only be set with load_reduce, and must be provided with it
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.tensor_scalar_reduce.html);
    # both were accepted: a stray reduce_init was ignored, a missing one loaded 0
    cmd = _reduce_cmd(a)
    if cmd == "load_reduce" and a.reduce_init is None:
        return "reduce_cmd=load_reduce without reduce_init", "pass reduce_init (the accumulator's initial value)"
    if cmd != "load_reduce" and a.reduce_init is not None:
        return (
            f"reduce_init with reduce_cmd={cmd}: only load_reduce reads it",
            "pass reduce_cmd=nisa.reduce_cmd.load_reduce or drop reduce_init",
        )


TENSOR_SCALAR_REDUCE = declare(
    "tensor_scalar_reduce",
    "dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False, "
    "reduce_cmd=reduce_cmd.reset_reduce, reduce_init=None, reduce_res_negate=False, name=None",
    ("vector",),
    "dst = data op0 operand0, and reduce the result along the free dims into the Vector accumulators.",
    writes=("dst", "reduce_res"),
    tiles=("dst", "data", "reduce_res"),
    rules=(
        R.alu_op("op0", ("arith", "unary")),
        R.custom(
            "err_invalid_op",
            f"reduce_op is one of {', '.join(REDUCE_OPS)}",
            lambda a, ctx, engine: (
                None if op_name(a.reduce_op) in REDUCE_OPS else f"reduce_op {op_name(a.reduce_op)} is not one of {REDUCE_OPS}"
            ),
        ),
        R.same_partitions("dst", "data", "reduce_res"),
        R.same_free_size("dst", "data"),
        R.vector_operand("operand0"),
        # the tensor_scalar_reduce page has the same operand0 constraint for a unary op0
        R.custom("err_invalid_argument", "operand0 is None or 0 when op0 is unary", _unary_operand_check),
        R.custom("err_invalid_argument", "reduce_init is given exactly when reduce_cmd is load_reduce", _tsr_init_check),
        R.custom(
            "err_shape_mismatch",
            "reduce_res is [P, 1]",
            lambda a, ctx, engine: (
                None if a.reduce_res is None or free_size(a.reduce_res) == 1 else f"reduce_res {a.reduce_res.shape} must be [P, 1]"
            ),
        ),
    ),
    attrs=lambda a: {"op0": op_name(a.op0), "reduce_op": op_name(a.reduce_op)},
    overwrites=("dst", "reduce_res"),
    kind="compute",
    cost=costs.PLUS_MIN_II,
)


@TENSOR_SCALAR_REDUCE.semantics_impl
def _ts_reduce(a, ctx, engine):
    x = rows(a.data)
    p = x.shape[0]
    y = _apply(a.op0, x, scalar_or_vector(a.operand0 if a.operand0 is not None else 0.0, p), a.reverse0)
    store(a.dst, y)
    acc = accumulate(ctx.vec_acc, p, op_name(a.reduce_op), _reduce_cmd(a), y, a.reduce_init)
    if a.reduce_res is not None:
        store(a.reduce_res, -acc if a.reduce_res_negate else acc)


def _tsc_dtype_check(a, ctx, engine):
    # INT32/UINT32 are not supported as input/output dtypes, an ISA limitation
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.tensor_scalar_cumulative.html)
    for name in ("src", "dst"):
        t = getattr(a, name)
        if isinstance(t, NkiTensor) and t.dtype.name in ("int32", "uint32"):
            return f"{name} is {t.dtype}; tensor_scalar_cumulative has no 32-bit integer input/output", "use int16/uint16 or a float dtype"


TENSOR_SCALAR_CUMULATIVE = declare(
    "tensor_scalar_cumulative",
    "dst, src, op0, op1, imm0, imm1=None, reduce_cmd=reduce_cmd.reset_reduce, name=None",
    ("vector",),
    "Cumulative reduction: reg = op1(op0(src[i], imm0), reg); dst[i] = reg.",
    tiles=("dst", "src"),
    rules=(
        R.alu_op("op0", ("arith",)),
        R.custom(
            "err_invalid_op",
            "op1 is add, subtract, multiply, maximum or minimum",
            lambda a, ctx, engine: (
                None
                if op_name(a.op1) in ("add", "subtract", "multiply", "maximum", "minimum")
                else f"op1 {op_name(a.op1)} cannot accumulate"
            ),
        ),
        R.same_partitions("dst", "src"),
        R.same_free_size("dst", "src"),
        R.vector_operand("imm0"),
        R.custom("err_unsupported_dtype", "src and dst are not int32/uint32", _tsc_dtype_check),
    ),
    attrs=lambda a: {"op0": op_name(a.op0), "op1": op_name(a.op1)},
    overwrites=("dst",),
    kind="compute",
    cost=costs.SCAN,
)


@TENSOR_SCALAR_CUMULATIVE.semantics_impl
def _ts_cumulative(a, ctx, engine):
    if a.imm1 is not None and _reduce_cmd(a) != "load_reduce":
        # imm1 is the accumulator's initial value for load_reduce only (the page); other commands never read it
        warn(
            "warn_unused_argument",
            f"tensor_scalar_cumulative ignores imm1 with reduce_cmd={_reduce_cmd(a)} (only load_reduce loads it)",
        )
    x = rows(a.src)
    p, n = x.shape
    op1 = op_name(a.op1)
    accumulate(ctx.vec_acc, p, "add" if op1 == "subtract" else op1, _reduce_cmd(a), None, a.imm1)
    reg = ctx.vec_acc[:p].copy()
    t = _apply(a.op0, x, scalar_or_vector(a.imm0, p), False)
    out = np.empty_like(t)
    f1 = ALU[op1].fn
    for i in range(n):
        reg = f1(t[:, i], reg)
        out[:, i] = reg
    ctx.vec_acc[:p] = reg
    store(a.dst, out)


# ---------------------------------------------------------------- copies and fills


def _scalar_copy_on_trn1(a, ctx, engine):
    if engine == "scalar" and not ctx.target.features.scalar_tensor_copy:
        return (
            f"tensor_copy on the Scalar Engine is not supported on {ctx.target.name}",
            "use nisa.activation(op=nl.copy, ...) or the vector engine",
        )


TENSOR_COPY = declare(
    "tensor_copy",
    "dst, src, engine=engine.unknown, name=None",
    ("vector", "scalar", "gpsimd"),
    "Copy a tile within SBUF/PSUM on Vector, Scalar or GpSimd; bit-exact when dtypes match, else cast via fp32.",
    tiles=("dst", "src"),
    rules=(
        R.same_partitions("dst", "src"),
        R.same_free_size("dst", "src"),
        R.custom("err_unsupported_on_target", "not on the Scalar Engine on trn1", _scalar_copy_on_trn1),
    ),
    attrs=lambda a: {"dtype": a.src.dtype.name, "dst_dtype": a.dst.dtype.name},
    overwrites=("dst",),
    kind="move",
    cost=costs.PERF_STREAMING,
    perf_modes=costs.COPY_MODES,
    deferrable=True,
)


@TENSOR_COPY.semantics_impl
def _tensor_copy(a, ctx, engine):
    if a.src.dtype == a.dst.dtype:
        store_raw(a.dst, np.asarray(read(a.src)))
    else:
        store(a.dst, f32(a.src))


def _pred_check(a, ctx, engine):
    if isinstance(a.src, NkiTensor):
        if a.src.dtype != a.dst.dtype:
            return f"src is {a.src.dtype} but dst is {a.dst.dtype}", "use the same dtype for src and dst"
        if a.src.storage.kind == "psum" and a.predicate.storage.kind == "psum":
            return "src and predicate are both in PSUM", "copy one of them to SBUF first"


TENSOR_COPY_PREDICATED = declare(
    "tensor_copy_predicated",
    "dst, src, predicate, reverse_pred=False, name=None",
    ("vector",),
    "Copy src (tile or scalar) into dst where predicate is nonzero (zero with reverse_pred); other elements keep dst.",
    tiles=("dst", "predicate"),
    rules=(
        R.same_partitions("dst", "src", "predicate"),
        R.same_free_size("dst", "src", "predicate"),
        R.dtype_in("predicate", ("uint8", "uint16", "uint32", "bool_")),
        R.custom("err_dtype_mismatch", "src and dst share a dtype; src and predicate not both in PSUM", _pred_check),
    ),
    kind="move",
    cost=costs.COPY_PREDICATED,
)


@TENSOR_COPY_PREDICATED.semantics_impl
def _copy_pred(a, ctx, engine):
    pred = _int_rows(a.predicate) != 0
    if a.reverse_pred:
        pred = ~pred
    cur = np.array(_int_rows(a.dst))
    src = _int_rows(a.src) if isinstance(a.src, NkiTensor) else np.broadcast_to(np.asarray(a.src).astype(a.dst.dtype.storage), cur.shape)
    store_raw(a.dst, np.where(pred, src, cur))


def _memset_check(a, ctx, engine):
    dt = a.dst.dtype
    v = a.value
    if not isinstance(v, int | float | bool | np.number):
        return f"value {v!r} is not a compile-time number", "pass a Python int or float"
    if dt.kind == "packed" and v != 0:
        return f"x4 packed dtype {dt} only accepts value=0", "memset to 0"
    if dt.is_int and not np.isfinite(float(v)):
        return f"value {v} is not finite, integer dtype {dt} has no NaN/Inf", "pass an integer value"
    if dt.is_int and float(v) != int(v):
        return f"value {v} does not fit integer dtype {dt}", "pass an integer value"
    if dt.is_int and dt.kind != "bool":
        info = np.iinfo(dt.storage)
        if not info.min <= int(v) <= info.max:
            return f"value {v} is outside the range of {dt}", f"use a value in [{info.min}, {info.max}]"


MEMSET = declare(
    "memset",
    "dst, value, engine=engine.unknown, name=None",
    ("vector", "gpsimd"),
    "Fill a tile with a compile-time constant on the Vector or GpSimd Engine.",
    tiles=("dst",),
    rules=(R.custom("err_memset_value_type", "value is a number representable in dst's dtype (x4 types: only 0)", _memset_check),),
    attrs=lambda a: {"value": a.value},
    overwrites=("dst",),
    kind="constant",
    cost=costs.MEMSET,
)


@MEMSET.semantics_impl
def _memset(a, ctx, engine):
    dt = a.dst.dtype
    if dt.is_int:
        store_raw(a.dst, np.full(a.dst.shape, int(a.value), dtype=dt.storage))
    else:
        store(a.dst, np.full(a.dst.shape, float(a.value), dtype=np.float32))


RECIPROCAL = declare(
    "reciprocal",
    "dst, data, name=None",
    ("vector",),
    "Element-wise 1/x on the Vector Engine (more precise, ~8x slower than activation(nl.reciprocal)).",
    tiles=("dst", "data"),
    rules=(R.same_partitions("dst", "data"), R.same_free_size("dst", "data")),
    overwrites=("dst",),
    kind="compute",
    cost=costs.RECIPROCAL,
)


@RECIPROCAL.semantics_impl
def _reciprocal(a, ctx, engine):
    with np.errstate(divide="ignore"):
        store(a.dst, np.float32(1) / rows(a.data))


# ---------------------------------------------------------------- statistics

BN_STATS = declare(
    "bn_stats",
    "dst, data, name=None",
    ("vector",),
    "Per-partition statistics of up to 512 elements: (count, mean, var*count) of the even and of the odd elements.",
    tiles=("dst", "data"),
    rules=(
        R.same_partitions("dst", "data"),
        R.max_free("data", 512),
        R.custom(
            "err_shape_mismatch",
            "dst holds 6 elements per partition",
            lambda a, ctx, engine: None if free_size(a.dst) == 6 else f"dst {a.dst.shape} must hold 6 elements per partition",
        ),
    ),
    overwrites=("dst",),
    kind="compute",
    cost=costs.STREAMING,
)


def _stats_into(out: np.ndarray, x: np.ndarray) -> None:
    """out[:, 0:3] = (count, mean, sum of squared deviations) of each row of x, computed in fp64 and rounded
    once to fp32. The calls x.mean(dtype=fp64) and ((x - mean) ** 2).sum(dtype=fp64) make, without their
    wrappers' extra arrays: the same sum and division, np.square (what ** 2 runs), the same fp64 reduction."""
    n = x.shape[1]
    if n == 0:
        out[:, 0:3] = 0
        return
    mean = np.add.reduce(x, axis=1, dtype=np.float64)
    mean /= n
    dev = np.subtract(x, mean[:, None])
    np.square(dev, out=dev)
    out[:, 0] = n
    out[:, 1] = mean
    out[:, 2] = np.add.reduce(dev, axis=1)


@BN_STATS.semantics_impl
def _bn_stats(a, ctx, engine):
    x = rows(a.data)
    out = np.empty((x.shape[0], 6), np.float32)
    _stats_into(out[:, 0:3], x[:, 0::2])
    _stats_into(out[:, 3:6], x[:, 1::2])
    store(a.dst, out)


BN_AGGR = declare(
    "bn_aggr",
    "dst, data, name=None",
    ("vector",),
    "Aggregate bn_stats (count, mean, var*count) triples into (mean, variance) per partition.",
    tiles=("dst", "data"),
    rules=(
        R.same_partitions("dst", "data"),
        R.custom(
            "err_shape_mismatch",
            "data holds a multiple of 3 elements per partition; dst holds 2",
            lambda a, ctx, engine: (
                f"data has {free_size(a.data)} elements per partition, not a multiple of 3"
                if free_size(a.data) % 3
                else None
                if free_size(a.dst) == 2
                else f"dst {a.dst.shape} must hold 2 elements"
            ),
        ),
    ),
    overwrites=("dst",),
    kind="compute",
    cost=costs.BN_AGGR,
)


@BN_AGGR.semantics_impl
def _bn_aggr(a, ctx, engine):
    x = rows(a.data).astype(np.float64).reshape(-1, free_size(a.data) // 3, 3)
    c, m, v = x[..., 0], x[..., 1], x[..., 2]
    n = c.sum(axis=1)
    safe = np.where(n > 0, n, 1)
    mean = (c * m).sum(axis=1) / safe
    var = (v.sum(axis=1) + (c * (m - mean[:, None]) ** 2).sum(axis=1)) / safe
    store(a.dst, np.stack([mean, var], axis=1).astype(np.float32))


# ---------------------------------------------------------------- top-8 search


def _top8_check(name):
    def check(a, ctx, engine):
        n = free_size(getattr(a, name))
        if not 8 <= n <= 16384:
            return f"{name} has {n} elements per partition; 8 to 16384 are supported", None
        if free_size(a.dst) != 8:
            return f"dst {a.dst.shape} must hold 8 elements per partition", "allocate dst as (P, 8)"

    return check


MAX8 = declare(
    "max8",
    "dst, src, name=None",
    ("vector",),
    "The 8 largest values of each partition, in descending order.",
    tiles=("dst", "src"),
    rules=(
        R.same_partitions("dst", "src"),
        R.custom("err_size_of_dimension_exceed_arch_limit", "src has 8..16384 elements per partition, dst 8", _top8_check("src")),
    ),
    overwrites=("dst",),
    kind="compute",
    cost=costs.LINEAR,
)


@MAX8.semantics_impl
def _max8(a, ctx, engine):
    x = rows(a.src)
    store(a.dst, -np.sort(-x, axis=1)[:, :8])


FIND_INDEX8 = declare(
    "nc_find_index8",
    "dst, data, vals, name=None",
    ("vector",),
    "Index of the first occurrence of each of 8 values per partition; missing values give all-ones.",
    tiles=("dst", "data", "vals"),
    rules=(
        R.same_partitions("dst", "data", "vals"),
        R.dtype_in("dst", ("uint16", "uint32")),
        R.custom("err_size_of_dimension_exceed_arch_limit", "data 8..16384 elements, vals and dst 8", _top8_check("data")),
    ),
    kind="compute",
    cost=costs.LINEAR,
)


@FIND_INDEX8.semantics_impl
def _find_index8(a, ctx, engine):
    # Duplicate vals take successive matching positions, ascending across dst columns (the nc_match_replace8
    # docstring: the opposite of its own reverse order); a val with no unused match gives all-ones.
    x, v = rows(a.data), rows(a.vals)[:, :8]
    p = x.shape[0]
    taken = np.zeros(x.shape, dtype=bool)
    lanes = np.arange(p)
    sentinel = np.iinfo(a.dst.dtype.storage).max
    out = np.full((p, 8), sentinel, np.int64)
    for i in range(8):
        hit = (x == v[:, i : i + 1]) & ~taken
        found = hit.any(axis=1)
        first = hit.argmax(axis=1)
        out[found, i] = first[found]
        taken[lanes[found], first[found]] = True
    store_raw(a.dst, out.astype(a.dst.dtype.storage))


MATCH_REPLACE8 = declare(
    "nc_match_replace8",
    "dst, data, vals, imm, dst_idx=None, name=None",
    ("vector",),
    "Replace the first occurrence of each of 8 values with imm (vals processed 7..0); optional indices into dst_idx.",
    writes=("dst", "dst_idx"),
    tiles=("dst", "data", "vals", "dst_idx"),
    rules=(
        R.same_partitions("dst", "data", "vals"),
        R.same_free_size("dst", "data"),
        R.custom(
            "err_size_of_dimension_exceed_arch_limit",
            "vals has 8 elements per partition",
            lambda a, ctx, engine: None if free_size(a.vals) == 8 else f"vals {a.vals.shape} must hold 8 per partition",
        ),
    ),
    kind="compute",
    cost=costs.MATCH_REPLACE8,
)


@MATCH_REPLACE8.semantics_impl
def _match_replace8(a, ctx, engine):
    work = rows(a.data).copy()
    v = rows(a.vals)
    p = work.shape[0]
    idx = np.zeros((p, 8), np.int64)
    taken = np.zeros_like(work, dtype=bool)
    lanes = np.arange(p)
    for i in range(7, -1, -1):
        hit = (work == v[:, i : i + 1]) & ~taken
        has = hit.any(axis=1)
        pos = hit.argmax(axis=1)
        idx[:, i] = np.where(has, pos, 0)
        taken[lanes[has], pos[has]] = True
    work[taken] = np.float32(a.imm)
    store(a.dst, work)
    if a.dst_idx is not None:
        store_raw(a.dst_idx, idx.astype(a.dst_idx.dtype.storage))


def _exp_reduce_init(a, ctx, engine):
    # the page's constraint list: reduce_init should be unset or 0.0 when reduce_cmd is not load_reduce
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.exponential.html). A number
    # is checked; a tile's values are not known until it runs, so a tile is left alone.
    v = a.reduce_init
    if _reduce_cmd(a) != "load_reduce" and isinstance(v, R.NUMBER) and float(v) != 0.0:
        return (
            f"reduce_init={v!r} with reduce_cmd={_reduce_cmd(a)}: only load_reduce reads it",
            "pass reduce_cmd=nisa.reduce_cmd.load_reduce, or leave reduce_init at 0.0",
        )


EXPONENTIAL = declare(
    "exponential",
    "dst, src, max_value=0.0, reduce_res=None, reduce_cmd=reduce_cmd.idle, reduce_init=0.0, name=None",
    ("vector",),
    "exp(src - max_value) on the Vector Engine, with an optional running sum in the accumulators (NeuronCore-v4).",
    writes=("dst", "reduce_res"),
    tiles=("dst", "src", "reduce_res"),
    rules=(
        R.same_partitions("dst", "src", "reduce_res"),
        R.same_free_size("dst", "src"),
        R.vector_operand("max_value"),
        R.vector_operand("reduce_init"),
        R.custom(
            "err_invalid_argument",
            "reduce_init is unset or 0.0 unless reduce_cmd is load_reduce",
            _exp_reduce_init,
        ),
        R.custom(
            "err_exceed_max_supported_dimension",
            "src and dst are at most 4-d",
            lambda a, ctx, engine: None if a.src.ndim <= 4 and a.dst.ndim <= 4 else "tiles must be at most 4-d",
        ),
    ),
    overwrites=("dst", "reduce_res"),
    kind="compute",
    cost=costs.EXPONENTIAL,
)


@EXPONENTIAL.semantics_impl
def _exponential(a, ctx, engine):
    x = rows(a.src)
    p = x.shape[0]
    with np.errstate(over="ignore"):
        y = np.exp(x - scalar_or_vector(a.max_value, p)).astype(np.float32, copy=False)
    store(a.dst, y)
    acc = accumulate(ctx.vec_acc, p, "add", _reduce_cmd(a), y, a.reduce_init)
    if a.reduce_res is not None:
        store(a.reduce_res, acc)


STREAM_SHUFFLE = declare(
    "nc_stream_shuffle",
    "dst, src, shuffle_mask, name=None",
    ("vector",),
    "Move partitions within each 32-partition quadrant: dst[i] = src[mask[i]]; 255 keeps dst[i].",
    tiles=("dst", "src"),
    rules=(
        R.same_dtype("dst", "src"),
        R.same_free_size("dst", "src"),
        R.custom(
            "err_invalid_argument",
            "shuffle_mask has 32 entries in [0, 32) or 255",
            lambda a, ctx, engine: (
                None
                if isinstance(a.shuffle_mask, list | tuple)
                and len(a.shuffle_mask) == 32
                and all(isinstance(m, int | np.integer) and (0 <= int(m) < 32 or int(m) == 255) for m in a.shuffle_mask)
                else "shuffle_mask must list 32 partition indices (0..31) or 255"
            ),
        ),
    ),
    kind="move",
    cost=costs.STREAMING,
)


@STREAM_SHUFFLE.semantics_impl
def _stream_shuffle(a, ctx, engine):
    src = np.array(_int_rows(a.src))
    out = np.array(_int_rows(a.dst))
    for base in range(0, out.shape[0], 32):
        for i, m in enumerate(a.shuffle_mask):
            m = int(m)
            if m != 255 and base + i < out.shape[0] and base + m < src.shape[0]:
                out[base + i] = src[base + m]
    store_raw(a.dst, out)
