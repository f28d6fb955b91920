"""`neuronxcc.nki.isa` (NKI Beta 1): the legacy instruction signatures, each lowered to the current op.

A legacy instruction returns its result: each function allocates the result tile the legacy docs describe
(SBUF, or PSUM for nc_matmul and TensorE transposes; the input's dtype unless `dtype=`) and calls the current
`nki.isa` op with `dst=` -- so the op table stays the one place op facts (rules, semantics, costs) live.
`mask=` restricts the instruction to the box of its iteration space the mask selects.

Sources: SDK 2.26 general/nki/api/nki/isa/__init__.py (one docstring per op) at
https://github.com/aws-neuron/aws-neuron-sdk/tree/49ee15c58418d5f19b2407bc7057a7beb77ab24a/general/nki/api/nki/isa.
"""

from __future__ import annotations

import numpy as np

from nkidev.emulator import isa as cur
from nkidev.emulator import language as cl
from nkidev.emulator.dtypes import to_nki_dtype
from nkidev.emulator.enums import dge_mode, engine, matmul_perf_mode, nc_version, oob_mode, reduce_cmd
from nkidev.emulator.enums import engine as _E
from nkidev.emulator.enums import reduce_cmd as _RC
from nkidev.emulator.location import kernel_location, rule_error
from nkidev.emulator.tensor import NkiTensor, free_size, partitions
from nkidev.errors import NkiNotSupportedError
from nkidev.legacy import language as nl
from nkidev.legacy.index import IndexExpr, Mask, mask_box
from nkidev.legacy.language import _NUMPY_OPS, _dtype_of, _operand, _shape_of, masked, promote
from nkidev.legacy.tile import as_legacy, need_tile, produced, result_tile, tile_of

tensor_engine, vector_engine, scalar_engine, gpsimd_engine, unknown_engine = (
    engine.tensor,
    engine.vector,
    engine.scalar,
    engine.gpsimd,
    engine.unknown,
)
dma_engine = engine.dma
engine = engine
reduce_cmd, dge_mode, oob_mode, nc_version = reduce_cmd, dge_mode, oob_mode, nc_version
fp32 = nl.fp32
get_nc_version = cur.get_nc_version


def _alu(op):
    try:
        return _NUMPY_OPS.get(op, op)
    except TypeError:
        return op


def _engine(e):
    return _E(int(e)) if isinstance(e, int) else e


def _out(dtype, default):
    return to_nki_dtype(dtype) if dtype is not None else default


def _data(x, what: str = "data"):
    return need_tile(_operand(x, what), what)


# ---------------------------------------------------------------- Tensor Engine


def nc_matmul(
    stationary,
    moving,
    *,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    tile_position=(),
    tile_size=(),
    mask=None,
    perf_mode=None,
    **kwargs,
):
    """stationary.T @ moving into a new PSUM tile (fp32; the stationary dtype with is_transpose)."""
    s, m = _data(stationary, "stationary"), _data(moving, "moving")
    double = perf_mode is not None and "double_row" in str(getattr(perf_mode, "value", perf_mode))
    mode = matmul_perf_mode.double_row if double else matmul_perf_mode.none
    shape = (free_size(s) // (2 if double else 1), free_size(m) // (2 if double else 1))
    dt = s.dtype if is_transpose else nl.float32

    def run(box):
        st, mv = s, m
        if box is not None:
            (m0, mn), (n0, nn) = box
            st, mv = s[:, m0 : m0 + mn], m[:, n0 : n0 + nn]
        return nl.matmul_into(
            nl._box_shape(shape, box),
            dt,
            stationary=st,
            moving=mv,
            is_stationary_onezero=is_stationary_onezero,
            is_moving_onezero=is_moving_onezero,
            is_transpose=is_transpose,
            tile_position=tile_position,
            tile_size=tile_size,
            perf_mode=mode,
        )

    return masked(shape, mask, dt, run, buffer=nl.psum)


def nc_transpose(data, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """Partition <-> free transpose: TensorE (SBUF -> PSUM, up to 128x128) or VectorE (up to 32x32, SBUF)."""
    x = _data(data)
    p, f = partitions(x), free_size(x)
    eng = _engine(engine)
    if eng is _E.unknown:
        eng = _E.vector if p <= 32 and f <= 32 else _E.tensor
    buffer = nl.psum if eng is _E.tensor else nl.sbuf
    out = result_tile((f, p), x.dtype, buffer)
    cur.nc_transpose(dst=out, data=x.reshape((p, f)) if x.ndim != 2 else x, engine=eng)
    if dtype is not None and to_nki_dtype(dtype) != x.dtype:
        cast = result_tile((f, p), to_nki_dtype(dtype), buffer)
        cur.tensor_copy(dst=cast, src=out)
        out = cast
    return produced(out)


# ---------------------------------------------------------------- Scalar Engine


def _reduce_cmd(cmd, reduce_res):
    """Legacy activation with reduce_res reduced into it (the accumulators are reset first)."""
    if reduce_res is not None and cmd is _RC.idle:
        return _RC.reset_reduce
    return cmd


def activation(
    op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd=reduce_cmd.idle, mask=None, dtype=None, **kwargs
):
    """op(data * scale + bias) into a new tile; with reduce_res, its (P, 1) free-dim sums land there too."""
    x = _data(data)
    bias, scale = _operand(bias), _operand(scale)
    res = tile_of(reduce_res)
    dt = _out(dtype, x.dtype)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        cur.activation(
            dst=dst,
            op=_alu(op),
            data=xs,
            bias=_partition_box(bias, box),
            scale=_partition_box(scale, box),
            reduce_op=_alu(reduce_op) if reduce_op is not None else (cl.add if res is not None else None),
            reduce_res=_partition_box(res, box),
            reduce_cmd=_reduce_cmd(reduce_cmd, res),
        )
        return dst

    return masked(tuple(x.shape), mask, dt, run)


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None, dtype=None, **kwargs):
    x = _data(data)
    dt = _out(dtype, x.dtype)
    bias, scale, res = _operand(bias), _operand(scale), tile_of(reduce_res)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        cur.activation_reduce(
            dst=dst,
            op=_alu(op),
            data=xs,
            reduce_op=_alu(reduce_op),
            reduce_res=_partition_box(res, box),
            bias=_partition_box(bias, box),
            scale=_partition_box(scale, box),
        )
        return dst

    return masked(tuple(x.shape), mask, dt, run)


# ---------------------------------------------------------------- Vector / GpSimd element-wise


def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=engine.unknown, **kwargs):
    a, b = _data(data1, "data1"), _data(data2, "data2")
    dt = _out(dtype, promote(a.dtype, b.dtype))

    def run(box):
        x, y = tile_of(a, box), tile_of(b, box)
        dst = result_tile(x.shape, dt)
        cur.tensor_tensor(dst=dst, data1=x, data2=y, op=_alu(op), engine=_engine(engine))
        return dst

    return masked(tuple(a.shape), mask, dt, run)


def tensor_scalar(
    data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *, dtype=None, mask=None, engine=engine.unknown, **kw
):
    x = _data(data)
    dt = _out(dtype, x.dtype)
    o0, o1 = _operand(operand0), _operand(operand1)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        cur.tensor_scalar(
            dst=dst,
            data=xs,
            op0=_alu(op0),
            operand0=_partition_box(o0, box),
            reverse0=reverse0,
            op1=_alu(op1) if op1 is not None else None,
            operand1=_partition_box(o1, box),
            reverse1=reverse1,
            engine=_engine(engine),
        )
        return dst

    return masked(tuple(x.shape), mask, dt, run)


def _off_psum(x):
    """GpSimd cannot read PSUM: the legacy compiler stages such an operand in SBUF first."""
    if x.storage.kind != "psum":
        return x
    staged = result_tile(x.shape, x.dtype)
    cur.tensor_copy(dst=staged, src=x)
    return staged


def _partition_box(v, box):
    """A (P, 1) operand cut to the partitions of the box (scalars unchanged)."""
    if box is None or not isinstance(v, NkiTensor):
        return v
    p0, pn = box[0]
    return v[p0 : p0 + pn]


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None, mask=None, **kwargs):
    x, o1 = _data(data), _data(operand1, "operand1")
    dt = _out(dtype, promote(x.dtype, o1.dtype))
    o0 = _operand(operand0)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        cur.scalar_tensor_tensor(
            dst=dst,
            data=xs,
            op0=_alu(op0),
            operand0=_partition_box(o0, box),
            op1=_alu(op1),
            operand1=tile_of(o1, box),
            reverse0=reverse0,
            reverse1=reverse1,
        )
        return dst

    return masked(tuple(x.shape), mask, dt, run)


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None, **kwargs):
    x = _data(data)
    dt = _out(dtype, x.dtype)
    o0, res = _operand(operand0), tile_of(reduce_res)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        cur.tensor_scalar_reduce(
            dst=dst,
            data=xs,
            op0=_alu(op0),
            operand0=_partition_box(o0, box),
            reduce_op=_alu(reduce_op),
            reduce_res=_partition_box(res, box),
            reverse0=reverse0,
        )
        return dst

    return masked(tuple(x.shape), mask, dt, run)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None, mask=None, **kwargs):
    a, b = _data(data0, "data0"), _data(data1, "data1")
    dt = _out(dtype, promote(a.dtype, b.dtype))
    init = _operand(initial)

    def run(box):
        x, y = tile_of(a, box), tile_of(b, box)
        dst = result_tile(x.shape, dt)
        cur.tensor_tensor_scan(
            dst=dst, data0=x, data1=y, initial=_partition_box(init, box), op0=_alu(op0), op1=_alu(op1), reverse0=reverse0, reverse1=reverse1
        )
        return dst

    return masked(tuple(a.shape), mask, dt, run)


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kwargs):
    """Reduce free axes (reduced axes dropped unless keepdims; a (P, 1) tile when only the partition dim is left)."""
    x = data if isinstance(data, nl.Indexed) else _data(data)
    axes = nl._axes(x.ndim, axis)
    if not axes or axes != tuple(range(axes[0], x.ndim)):
        raise rule_error(
            "err_reduce_axis_invalid",
            f"tensor_reduce axis={axis} on a {x.ndim}-d tile; the reduced axes must be the last contiguous free dims",
            f"use axis={x.ndim - 1} or a tuple ending at {x.ndim - 1} (nl.sum/nl.max accept any free axes)",
        )
    return nl.reduction(_alu(op), x, axis, dtype, mask, keepdims, negate)


def tensor_partition_reduce(op, data, *, mask=None, dtype=None, **kwargs):
    x = _data(data)
    dt = _out(dtype, x.dtype)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile((1, *xs.shape[1:]), dt)
        cur.tensor_partition_reduce(dst=dst, op=_alu(op), data=xs)
        return dst

    return masked(tuple(x.shape), mask, dt, run, out_shape=(1, *x.shape[1:]), out_box=lambda box: ((0, 1), *box[1:]))


def tensor_copy(src, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    x = _data(src, "src")
    dt = _out(dtype, x.dtype)

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        cur.tensor_copy(dst=dst, src=xs, engine=_engine(engine))
        return dst

    return masked(tuple(x.shape), mask, dt, run)


def tensor_copy_predicated(*, src, dst, predicate, reverse_pred=False, mask=None, dtype=None, **kwargs):
    """Copy src into dst (in place) where the predicate is nonzero."""
    cur.tensor_copy_predicated(dst=tile_of(dst), src=_operand(src), predicate=_data(predicate, "predicate"), reverse_pred=reverse_pred)


def _elementwise(x, mask, dt, call):
    """A one-input instruction over x's shape: `call(dst, data, box)` issues it for the box a mask selects."""

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile(xs.shape, dt)
        call(dst, xs, box)
        return dst

    return masked(tuple(x.shape), mask, dt, run)


def reciprocal(data, *, mask=None, dtype=None, **kwargs):
    x = _data(data)
    return _elementwise(x, mask, _out(dtype, x.dtype), lambda dst, xs, box: cur.reciprocal(dst=dst, data=xs))


def dropout(data, prob, *, mask=None, dtype=None, **kwargs):
    x, p = _data(data), _operand(prob)
    return _elementwise(x, mask, x.dtype, lambda dst, xs, box: cur.dropout(dst=dst, data=xs, prob=_partition_box(p, box)))


def memset(shape, value, dtype, *, mask=None, engine=engine.unknown, **kwargs):
    """A new tile of `shape` filled with value (cast to dtype); the first dim is the partition dim."""
    dims = tuple(int(s) for s in shape)
    dt = to_nki_dtype(dtype)

    def run(box):
        dst = result_tile(nl._box_shape(dims, box), dt)
        cur.memset(dst=dst, value=nl._memset_value(value, dt), engine=_engine(engine))
        return dst

    return masked(dims, mask, dt, run)


def iota(expr, dtype, *, mask=None, **kwargs):
    """The values of an affine index expression as a tile (int32 math, cast to dtype)."""
    if isinstance(expr, int | np.integer):
        expr = IndexExpr((1, 1), int(expr), {})
    if not isinstance(expr, IndexExpr) or not expr.affine:
        raise rule_error("err_legacy_index", f"iota of {expr!r}", "pass an affine expression of nl.arange/nl.mgrid")
    shape = expr.shape if len(expr.shape) >= 2 else (1,) * (2 - len(expr.shape)) + tuple(expr.shape)
    rank = len(shape)
    coef = {rank + (a if a < 0 else a - len(expr.shape)): c for a, c in expr.coef.items() if expr.shape[a] > 1}
    dst = result_tile(shape, to_nki_dtype(dtype))
    pattern = [[coef.get(j, 0), shape[j]] for j in range(1, rank)]
    cur.iota(dst=dst, pattern=pattern, offset=expr.const, channel_multiplier=coef.get(0, 0))
    return produced(dst)


_CMP = {"<": cl.less, "<=": cl.less_equal, ">": cl.greater, ">=": cl.greater_equal, "==": cl.equal}


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kwargs):
    """on_true_tile where the affine comparison `pred` holds, else on_false_value (e.g. causal masks)."""
    x = _data(on_true_tile, "on_true_tile")
    if not isinstance(pred, Mask) or len(pred.terms) != 1 or not pred.terms[0][0].affine or pred.terms[0][1] not in _CMP:
        raise rule_error("err_legacy_index", "affine_select pred must be one comparison of affine index expressions", "e.g. pred=(iy < ix)")
    expr, op = pred.terms[0]
    x = _off_psum(x)
    rank = x.ndim
    coef = {rank + a: c for a, c in expr.coef.items() if expr.shape[a] > 1}
    dst = result_tile(x.shape, _out(dtype, x.dtype))
    pattern = [[coef.get(j, 0), x.shape[j]] for j in range(1, rank)]
    cur.affine_select(
        dst=dst,
        pattern=pattern,
        channel_multiplier=coef.get(0, 0),
        on_true_tile=x,
        on_false_value=float(on_false_value),
        cmp_op=_CMP[op],
        offset=expr.const,
    )
    return produced(dst)


def range_select(
    *,
    on_true_tile,
    comp_op0,
    comp_op1,
    bound0,
    bound1,
    reduce_cmd=reduce_cmd.idle,
    reduce_res=None,
    reduce_op=np.amax,
    range_start=0,
    on_false_value=None,
    mask=None,
    dtype=None,
    **kwargs,
):
    """The legacy implementation always filled with FP32_MIN and reset-reduced, whatever the arguments said."""
    x = _data(on_true_tile, "on_true_tile")
    dst = result_tile(x.shape, _out(dtype, x.dtype))
    cur.range_select(
        dst=dst,
        on_true_tile=x,
        comp_op0=_alu(comp_op0),
        comp_op1=_alu(comp_op1),
        bound0=_operand(bound0),
        bound1=_operand(bound1),
        reduce_cmd=_RC.reset_reduce,
        reduce_res=tile_of(reduce_res),
        reduce_op=cl.maximum,
        range_start=range_start,
    )
    return produced(dst)


def select_reduce(
    *, dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=reduce_cmd.idle, reduce_op=np.amax, reverse_pred=False, **kw
):
    cur.select_reduce(
        dst=tile_of(dst),
        predicate=_data(predicate, "predicate"),
        on_true=_data(on_true, "on_true"),
        on_false=_operand(on_false),
        reduce_res=tile_of(reduce_res),
        reduce_cmd=reduce_cmd,
        reduce_op=_alu(reduce_op),
        reverse_pred=reverse_pred,
    )


def _per_partition(x, mask, dt, width: int, call):
    """An instruction that reduces each partition of x to `width` values (a mask bounds its input)."""

    def run(box):
        xs = tile_of(x, box)
        dst = result_tile((partitions(xs), width), dt)
        call(dst, xs, box)
        return dst

    shape = (partitions(x), width)
    return masked(tuple(x.shape), mask, dt, run, out_shape=shape, out_box=lambda box: (box[0], (0, width)))


def bn_stats(data, *, mask=None, dtype=None, **kwargs):
    x = _data(data)
    return _per_partition(x, mask, _out(dtype, x.dtype), 6, lambda dst, xs, box: cur.bn_stats(dst=dst, data=xs))


def bn_aggr(data, *, mask=None, dtype=None, **kwargs):
    x = _data(data)
    return _per_partition(x, mask, _out(dtype, x.dtype), 2, lambda dst, xs, box: cur.bn_aggr(dst=dst, data=xs))


def max8(*, src, mask=None, dtype=None, **kwargs):
    x = _data(src, "src")
    return _per_partition(x, mask, _out(dtype, x.dtype), 8, lambda dst, xs, box: cur.max8(dst=dst, src=xs))


def nc_find_index8(*, data, vals, mask=None, dtype=None, **kwargs):
    x, v = _data(data), _data(vals, "vals")
    return _per_partition(
        x, mask, _out(dtype, nl.uint32), 8, lambda dst, xs, box: cur.nc_find_index8(dst=dst, data=xs, vals=_partition_box(v, box))
    )


def nc_match_replace8(*, data, vals, imm, dst_idx=None, mask=None, dtype=None, **kwargs):
    """Replace the 8 values in data (the mask bounds data) with imm; indices into dst_idx."""
    x, v, idx = _data(data), _data(vals, "vals"), tile_of(dst_idx)
    return _elementwise(
        x,
        mask,
        _out(dtype, x.dtype),
        lambda dst, xs, box: cur.nc_match_replace8(
            dst=dst, data=xs, vals=_partition_box(v, box), imm=imm, dst_idx=_partition_box(idx, box)
        ),
    )


def nc_stream_shuffle(src, dst, shuffle_mask, *, dtype=None, mask=None, **kwargs):
    """Legacy argument order (src, dst, ...); writes dst in place."""
    cur.nc_stream_shuffle(dst=tile_of(dst), src=_data(src, "src"), shuffle_mask=shuffle_mask)


def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None, **kwargs):
    src, idx = _data(src_buffer, "src_buffer"), _data(index, "index")
    valid = num_valid_indices if num_valid_indices is not None else idx.size // max(1, partitions(idx) // 16)
    dst = result_tile((partitions(src), valid * num_elem_per_idx), src.dtype)
    cur.local_gather(dst=dst, src_buffer=src, index=idx, num_elem_per_idx=num_elem_per_idx, num_valid_indices=num_valid_indices)
    return produced(dst)


def sequence_bounds(*, segment_ids, dtype=None, **kwargs):
    ids = _data(segment_ids, "segment_ids")
    dst = result_tile((1, 2, free_size(ids)), _out(dtype, ids.dtype))
    cur.sequence_bounds(dst=dst, segment_ids=ids)
    return produced(dst)


# ---------------------------------------------------------------- DMA


def dma_copy(*, dst, src, mask=None, dst_rmw_op=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, **kwargs):
    """dst <- src through the DMA engines; dst_rmw_op=np.add accumulates into dst (dma_compute today)."""
    shape = _shape_of(dst)
    box = mask_box(mask, shape)
    if box is not None and any(n == 0 for _, n in box):
        return
    d, s = tile_of(dst, box), nl._sub(src, box, len(shape))
    if dst_rmw_op is not None:
        cur.dma_compute(dst=d, srcs=[s, d], reduce_op=cl.add)
        return
    cur.dma_copy(dst=d, src=s, oob_mode=oob_mode, dge_mode=dge_mode)


def dma_transpose(src, *, axes=None, mask=None, dtype=None, **kwargs):
    x = tile_of(src)
    order = tuple(axes) if axes is not None else {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(x.ndim)
    dst = result_tile(tuple(x.shape[a] for a in order), x.dtype)
    cur.dma_transpose(dst=dst, src=x, axes=axes)
    return produced(dst)


# ---------------------------------------------------------------- not emulated


def _missing(name: str):
    def fn(*args, **kwargs):
        raise NkiNotSupportedError(
            "err_not_supported_yet",
            f"neuronxcc.nki.isa.{name} is not emulated (removed from NKI 0.4.0)",
            "use nisa.tensor_copy with .ap(scalar_offset=...) from the current API",
            kernel_location(),
        )

    fn.__name__ = name
    return fn


def tensor_copy_dynamic_src(src, *, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """A copy from a run-time offset (src[ix, offsets[0, i] + iy]): tensor_copy of an .ap(scalar_offset=) view."""
    return tensor_copy(src, mask=mask, dtype=dtype, engine=engine)


def tensor_copy_dynamic_dst(*, dst, src, mask=None, dtype=None, engine=engine.unknown, **kwargs):
    """A copy to a run-time offset (dst[ix, offsets[0, i] + iy] = ...), in place."""
    cur.tensor_copy(dst=tile_of(dst), src=_data(src, "src"), engine=_engine(engine))


builtin_custom_op = _missing("builtin_custom_op")

_ = (as_legacy, _dtype_of)
