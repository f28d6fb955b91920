"""GpSimd Engine instructions: iota, affine_select, gathers, nonzero_with_count, topk."""

from __future__ import annotations

import math

import numpy as np

from nkidev.emulator import costs, gate
from nkidev.emulator import rules as R
from nkidev.emulator.alu import ALU, op_name
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import raw, rows, store, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.tensor import free_size, partitions


def _affine(pattern, offset: int, channel_multiplier: int, p: int) -> np.ndarray:
    """offset + channel*multiplier + sum(idx_d * step_d), int64, shape (P, prod(nums))."""
    pattern = [(int(s), int(n)) for s, n in pattern]
    vals = np.zeros([n for _, n in pattern] or [1], dtype=np.int64)
    for axis, (step, n) in enumerate(pattern):
        shape = [1] * len(pattern)
        shape[axis] = n
        vals = vals + (np.arange(n, dtype=np.int64) * step).reshape(shape)
    chan = np.arange(p, dtype=np.int64).reshape(p, 1) * int(channel_multiplier)
    return int(offset) + chan + vals.reshape(1, -1)


def _pattern_check(name_of_tile: str):
    def check(a, ctx, engine):
        try:
            pattern = [(int(s), int(n)) for s, n in a.pattern]
        except (TypeError, ValueError):
            return f"pattern {a.pattern!r} is not a list of [step, num] pairs", None
        if len(pattern) > 4:
            return f"pattern has {len(pattern)} dims; at most 4 are supported", None
        count = math.prod(n for _, n in pattern)
        if count != free_size(getattr(a, name_of_tile)):
            return (
                f"pattern covers {count} elements but the tile holds {free_size(getattr(a, name_of_tile))} per partition",
                "make prod(num) equal the elements per partition",
            )

    return check


IOTA = declare(
    "iota",
    "dst, pattern, offset=0, channel_multiplier=0, name=None",
    ("gpsimd",),
    "Generate offset + partition*channel_multiplier + sum(i_d*step_d) (int32 math, cast to dst) on GpSimd.",
    tiles=("dst",),
    rules=(
        R.in_memory("dst", ("sbuf",)),
        R.int_arg("offset", -(2**31), lambda a: 2**31 - 1, "2**31 - 1"),
        R.int_arg("channel_multiplier", -(2**31), lambda a: 2**31 - 1, "2**31 - 1"),
        R.custom("err_shape_mismatch", "pattern is up to 4-d and covers the tile's elements per partition", _pattern_check("dst")),
    ),
    overwrites=("dst",),
    kind="constant",
    cost=costs.GPSIMD,
)


@IOTA.semantics_impl
def _iota(a, ctx, engine):
    vals = _affine(a.pattern, a.offset, a.channel_multiplier, partitions(a.dst))
    vals = ((vals + 2**31) % 2**32 - 2**31).astype(np.int32)  # int32 arithmetic wraps
    if a.dst.dtype.is_int:
        info = np.iinfo(a.dst.dtype.storage)
        store_raw(a.dst, np.clip(vals, info.min, info.max).astype(a.dst.dtype.storage))
    else:
        store(a.dst, vals.astype(np.float32))


AFFINE_SELECT = declare(
    "affine_select",
    "dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=equal, offset=0, name=None",
    ("gpsimd",),
    "dst = on_true_tile where cmp_op(affine_value, 0) else on_false_value; affine_value as in iota (causal masks).",
    tiles=("dst", "on_true_tile"),
    rules=(
        R.in_memory("dst", ("sbuf",)),
        R.in_memory("on_true_tile", ("sbuf",)),
        R.same_partitions("dst", "on_true_tile"),
        R.same_free_size("dst", "on_true_tile"),
        R.alu_op("cmp_op", ("arith",)),
        # the page names cmp_op a comparison operator and compares the affine value with 0; nl.add passed the
        # arith-op rule and selected on add(value, 0) != 0
        # (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.affine_select.html)
        R.compare_op("cmp_op"),
        R.int_arg("offset", -(2**31), lambda a: 2**31 - 1, "2**31 - 1"),
        R.int_arg("channel_multiplier", -(2**31), lambda a: 2**31 - 1, "2**31 - 1"),
        R.number_arg("on_false_value"),
        R.custom("err_shape_mismatch", "pattern covers the tile's elements per partition", _pattern_check("dst")),
    ),
    attrs=lambda a: {"cmp_op": op_name(a.cmp_op)},
    overwrites=("dst",),
    kind="move",
    cost=costs.GPSIMD,
)


@AFFINE_SELECT.semantics_impl
def _affine_select(a, ctx, engine):
    vals = _affine(a.pattern, a.offset, a.channel_multiplier, partitions(a.dst)).astype(np.float32)
    pred = ALU[op_name(a.cmp_op)].fn(vals, np.float32(0)) != 0
    store(a.dst, np.where(pred, rows(a.on_true_tile), np.float32(a.on_false_value)))


N_GATHER = declare(
    "nc_n_gather",
    "dst, data, indices, name=None",
    ("gpsimd",),
    "Gather within each partition: dst[p, j] = data[p].flatten()[indices[p, j]].",
    tiles=("dst", "data", "indices"),
    rules=(
        R.in_memory("dst", ("sbuf",)),
        R.in_memory("data", ("sbuf",)),
        R.in_memory("indices", ("sbuf",)),
        R.same_partitions("dst", "data", "indices"),
        R.same_free_size("dst", "indices"),
        R.same_dtype("dst", "data"),
        R.dtype_in("indices", ("uint32",)),
    ),
    kind="move",
    cost=costs.GPSIMD_STREAMING,
)


@N_GATHER.semantics_impl
def _n_gather(a, ctx, engine):
    data = np.asarray(raw(a.data)).reshape(partitions(a.data), -1)
    idx = np.asarray(raw(a.indices)).reshape(partitions(a.indices), -1).astype(np.int64)
    if (idx >= data.shape[1]).any():
        raise rule_error(
            "err_tensor_access_out_of_bound", f"nc_n_gather index {int(idx.max())} >= {data.shape[1]} elements per partition", None
        )
    store_raw(a.dst, np.take_along_axis(data, idx, axis=1))


NONZERO = declare(
    "nonzero_with_count",
    "dst, src, index_offset=0, padding_val=-1, name=None",
    ("gpsimd",),
    "Indices of nonzero elements (+index_offset), padded, then the count; reads/writes partitions 0, 16, ..., 112.",
    tiles=("dst", "src"),
    rules=(
        R.dtype_in("src", ("float32", "int32")),
        R.dtype_in("dst", ("int32",)),
        R.same_partitions("dst", "src"),
        R.custom(
            "err_shape_mismatch",
            "dst has one more element per partition than src",
            lambda a, ctx, engine: (
                None
                if free_size(a.dst) == free_size(a.src) + 1
                else f"dst {a.dst.shape} must hold {free_size(a.src) + 1} elements per partition"
            ),
        ),
    ),
    kind="compute",
    cost=costs.GPSIMD_STREAMING,
)


@NONZERO.semantics_impl
def _nonzero(a, ctx, engine):
    src = np.asarray(raw(a.src)).reshape(partitions(a.src), -1)
    out = np.array(np.asarray(raw(a.dst)).reshape(partitions(a.dst), -1))
    n = src.shape[1]
    for p in range(0, src.shape[0], 16):
        nz = np.flatnonzero(src[p] != 0)
        row = np.full(n + 1, int(a.padding_val), np.int64)
        row[: nz.size] = nz + int(a.index_offset)
        row[n] = nz.size
        out[p] = row
    store_raw(a.dst, out.astype(np.int32))


# nisa.topk reads each group of 16 partitions as one "snake" (element i at partition i % 16, column i // 16) and
# writes its k largest in the same layout: k is val_dst's free size, n the snake's active elements. Pages: the NKI
# 0.7 reference https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.topk.html
# (groups, result layout, `sorted=`; positions past ceil(k/16) are not written) and the earlier
# .../en/latest/nki/api/generated/nki.isa.topk.html (dtypes, limits, results in ascending order, cost 4*n + K).
TOPK_GROUP = 16


def _topk_check(a, ctx, engine):
    p, k, n = partitions(a.src), free_size(a.val_dst), a.n  # n: an int in range (R.int_arg below runs first)
    if p % TOPK_GROUP:
        return f"src has {p} partitions; topk works on groups of 16", "use a partition count that is a multiple of 16"
    if free_size(a.idx_dst) != k:
        return f"idx_dst {a.idx_dst.shape} and val_dst {a.val_dst.shape} must have the same free size (k)", None
    if not 1 <= k < 32768 or k > n:
        return f"k={k} (val_dst's free size) must be in [1, 32767] and at most n={n}", "size val_dst's free dimension to k"
    if a.sorted:
        gate.require("nki.isa.topk(sorted=)")


TOPK = declare(
    "topk",
    "val_dst, idx_dst, src, n, sorted=False, name=None",
    ("gpsimd",),
    "The k largest values (k = val_dst's free size) of each 16-partition snake of n elements, and their snake indices.",
    semantics="For each group g of 16 partitions: snake[i] = src[16g + i % 16, i // 16] for i < n; the k largest "
    "(ascending; descending with sorted=True; of equal values the lower index ranks higher) land at val_dst[16g + j % 16, j // 16] "
    "and their i at idx_dst; slots past the k-th are not written.",
    writes=("val_dst", "idx_dst"),
    tiles=("val_dst", "idx_dst", "src"),
    rules=(
        R.in_memory("src", ("sbuf",)),
        R.in_memory("val_dst", ("sbuf",)),
        R.in_memory("idx_dst", ("sbuf",)),
        R.dtype_in("src", ("bfloat16",)),
        R.dtype_in("val_dst", ("bfloat16",)),
        R.dtype_in("idx_dst", ("uint32",)),
        R.same_partitions("val_dst", "idx_dst", "src"),
        # n: the active elements of one snake, which must fit src's 16 partitions
        R.int_arg("n", 8, lambda a: min(65535, TOPK_GROUP * free_size(a.src)), "65535 and 16 x src's free size"),
        R.custom("err_invalid_argument", "groups of 16 partitions; 1 <= k <= n", _topk_check),
    ),
    attrs=lambda a: {"n": int(a.n), "k": free_size(a.val_dst)},
    kind="compute",
    cost=costs.TOPK,
)


@TOPK.semantics_impl
def _topk(a, ctx, engine):
    p, n, k = partitions(a.src), int(a.n), free_size(a.val_dst)
    groups = p // TOPK_GROUP
    # snake[g, i] = src[16g + i % 16, i // 16], in src's own (bf16) storage: val_dst takes the same bits
    snake = np.asarray(raw(a.src)).reshape(groups, TOPK_GROUP, -1).transpose(0, 2, 1).reshape(groups, -1)[:, :n]
    top = np.argsort(-snake.astype(np.float32), axis=1, kind="stable")[:, :k]  # descending; equal values keep index order
    if not a.sorted:
        top = top[:, ::-1]
    vals = np.array(np.asarray(raw(a.val_dst)).reshape(p, -1))
    idx = np.array(np.asarray(raw(a.idx_dst)).reshape(p, -1))
    j = np.arange(k)
    rows_of = np.arange(groups)[:, None] * TOPK_GROUP + j % TOPK_GROUP
    cols_of = np.broadcast_to(j // TOPK_GROUP, rows_of.shape)
    vals[rows_of, cols_of] = np.take_along_axis(snake, top, axis=1)
    idx[rows_of, cols_of] = top
    store_raw(a.val_dst, vals)
    store_raw(a.idx_dst, idx.astype(a.idx_dst.dtype.storage))


CORE_PARTITIONS = 16  # each of the 8 GpSimd cores serves 16 contiguous partitions (local_gather docstring)


def _local_gather_indices(a) -> int:
    per_core = partitions(a.index) // CORE_PARTITIONS
    total = a.index.size // per_core if per_core else 0
    return total if a.num_valid_indices is None else int(a.num_valid_indices)


def _local_gather_check(a, ctx, engine):
    p = partitions(a.src_buffer)
    if partitions(a.index) != p or p % CORE_PARTITIONS:
        return f"src_buffer ({p} partitions) and index ({partitions(a.index)}) must match and be a multiple of 16", None
    if int(a.num_elem_per_idx) not in (1, 2, 4, 8, 16, 32):
        return f"num_elem_per_idx={a.num_elem_per_idx} must be one of 1, 2, 4, 8, 16, 32", None
    per_core = a.index.size // (p // CORE_PARTITIONS)
    n = _local_gather_indices(a)
    if n > per_core or n > 4096 or n < 0:
        return f"num_valid_indices={n}: at most the {per_core} indices of a 16-partition slice, and at most 4096", None
    if partitions(a.dst) != p or free_size(a.dst) != n * int(a.num_elem_per_idx):
        return f"dst {a.dst.shape} must hold {n} x {a.num_elem_per_idx} elements per partition", None


LOCAL_GATHER = declare(
    "local_gather",
    "dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, name=None",
    ("gpsimd",),
    "Gather within each 16-partition GpSimd core slice: every partition takes the elements at the slice's uint16 indices.",
    semantics="For core c (partitions 16c..16c+15): idx = index[16c:16c+16].flatten(order='F')[:num_valid_indices]; "
    "dst[p, k, :] = src_buffer[p].flatten()[idx[k] : idx[k] + num_elem_per_idx] (no dtype conversion).",
    tiles=("dst", "src_buffer", "index"),
    rules=(
        R.in_memory("dst", ("sbuf",)),
        R.in_memory("src_buffer", ("sbuf",)),
        R.in_memory("index", ("sbuf",)),
        R.dtype_in("index", ("uint16",)),
        R.same_dtype("dst", "src_buffer"),
        R.custom(
            "err_shape_mismatch",
            "16-partition slices; num_elem_per_idx in 1..32 (powers of 2); <= 4096 indices per core",
            _local_gather_check,
        ),
    ),
    attrs=lambda a: {"indices": _local_gather_indices(a), "num_elem_per_idx": int(a.num_elem_per_idx)},
    kind="move",
    cost=costs.GPSIMD_STREAMING,
)


@LOCAL_GATHER.semantics_impl
def _local_gather(a, ctx, engine):
    p = partitions(a.src_buffer)
    src = np.asarray(raw(a.src_buffer)).reshape(p, -1)
    index = np.asarray(raw(a.index)).reshape(p, -1).astype(np.int64)
    n, width = _local_gather_indices(a), int(a.num_elem_per_idx)
    out = np.empty((p, n, width), src.dtype)
    span = np.arange(width, dtype=np.int64)
    for c in range(0, p, CORE_PARTITIONS):
        idx = index[c : c + CORE_PARTITIONS].flatten(order="F")[:n]
        cols = idx[:, None] + span[None, :]  # (n, width)
        if cols.size and (cols.max() >= src.shape[1]):
            raise rule_error(
                "err_tensor_access_out_of_bound",
                f"local_gather index {int(idx.max())} + {width} passes the {src.shape[1]} elements of a partition",
                "undefined on hardware: keep indices inside the partition",
            )
        out[c : c + CORE_PARTITIONS] = src[c : c + CORE_PARTITIONS][:, cols]
    store_raw(a.dst, out)


def _bounds_check(a, ctx, engine):
    s, d = a.segment_ids, a.dst
    if partitions(s) != 1 or partitions(d) != 1:
        return "segment_ids and dst must have a partition dim of 1", None
    if free_size(d) != 2 * free_size(s):
        return f"dst {d.shape} must be (1, 2, {free_size(s)}): a start and an end per element", None


SEQUENCE_BOUNDS = declare(
    "sequence_bounds",
    "dst, segment_ids, name=None",
    ("gpsimd",),
    "Start and end index of the segment each element belongs to (padding id 0 gives [n, -1]).",
    semantics="Segments are runs of equal adjacent ids; dst[0, 0, i] = first index of i's run, dst[0, 1, i] = one past "
    "its last; id 0 (padding): start n, end -1.",
    tiles=("dst", "segment_ids"),
    rules=(
        R.dtype_in("segment_ids", ("float32", "int32")),
        R.dtype_in("dst", ("float32", "int32")),
        R.custom("err_shape_mismatch", "segment_ids is (1, n) and dst (1, 2, n)", _bounds_check),
    ),
    kind="compute",
    cost=costs.GPSIMD_STREAMING,
)


@SEQUENCE_BOUNDS.semantics_impl
def _sequence_bounds(a, ctx, engine):
    ids = rows(a.segment_ids).reshape(-1)
    n = ids.size
    pos = np.arange(n, dtype=np.int64)
    begins = np.ones(n, bool)
    begins[1:] = ids[1:] != ids[:-1]
    ends = np.ones(n, bool)
    ends[:-1] = ids[:-1] != ids[1:]
    start = np.maximum.accumulate(np.where(begins, pos, 0))
    stop = np.minimum.accumulate(np.where(ends, pos + 1, n)[::-1])[::-1]
    pad = ids == 0
    out = np.stack([np.where(pad, n, start), np.where(pad, -1, stop)]).astype(np.float32)
    store(a.dst, out.reshape(1, 2, n))
