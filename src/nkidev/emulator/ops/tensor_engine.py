"""Tensor Engine instructions: nc_matmul, nc_transpose (also on VectorE); nc_matmul_mx is in mx.py."""

from __future__ import annotations

import math

import numpy as np

from nkidev.emulator import costs, psum
from nkidev.emulator import rules as R
from nkidev.emulator.context import warn
from nkidev.emulator.dtypes import to_f32
from nkidev.emulator.enums import matmul_perf_mode
from nkidev.emulator.memory import acc_view, raw, read, store, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.tensor import copying, free_size, loaded, partitions, region

FP8 = ("float8_e4m3", "float8_e5m2", "float8_e4m3fn")


def _perf_mode(a) -> matmul_perf_mode | None:
    """The perf_mode argument as an enum member; kernels also pass the member's value ("double_row")."""
    mode = a.perf_mode
    if isinstance(mode, matmul_perf_mode):
        return mode
    if mode is None:
        return matmul_perf_mode.none
    try:
        return matmul_perf_mode(mode)
    except (ValueError, TypeError):
        return None


def _double(a) -> bool:
    return _perf_mode(a) is matmul_perf_mode.double_row


def _perf_mode_check(a, ctx, engine):
    if _perf_mode(a) is None:
        names = ", ".join(m.value for m in matmul_perf_mode)
        return f"perf_mode={a.perf_mode!r} is not a matmul_perf_mode", f"pass nisa.matmul_perf_mode.<name> or one of: {names}"


def _km(a):
    """(K, M, N): contraction, stationary free (dst partitions), moving free (dst free); computed once per call."""
    km = a.__dict__.get("_km")
    if km is None:
        s, m = a.stationary, a.moving
        if _double(a):
            km = (partitions(s) * 2, free_size(s) // 2, free_size(m) // 2)
        else:
            km = (partitions(s), free_size(s), free_size(m))
        a._km = km
    return km


def _matmul_check(a, ctx, engine):
    te = ctx.target.tensor_engine
    s, m, d = a.stationary, a.moving, a.dst
    k, mm, n = _km(a)
    row, col = te.rows, te.cols
    if a.tile_position or a.tile_size:
        if not (a.tile_position and a.tile_size) or len(a.tile_position) != 2 or len(a.tile_size) != 2:
            return "tile_position and tile_size must both be (row, column) pairs", "set both or neither"
        row, col = (int(x) for x in a.tile_size)
        sizes = ctx.target.features.matmul_tile_sizes
        if row not in sizes or col not in sizes:
            return f"tile_size {a.tile_size} not supported on {ctx.target.name}", f"use sizes from {sizes}"
        if any(int(p) % sz or int(p) >= 128 for p, sz in zip(a.tile_position, (row, col))):
            return f"tile_position {a.tile_position} must be multiples of tile_size {a.tile_size} below 128", None
    if partitions(s) != partitions(m):
        return (
            f"stationary has {partitions(s)} partitions, moving has {partitions(m)}: the contraction (partition) dims must match",
            "slice both operands to the same K",
        )
    if partitions(s) > row:
        return f"contraction size {partitions(s)} exceeds the {row}-row tile", f"tile K to {row}"
    if mm > min(col, te.stationary_fmax):
        return (
            f"stationary free size {mm} exceeds {min(col, te.stationary_fmax)}",
            "tile the stationary free dim (M) to 128 (nl.tile_size.gemm_stationary_fmax)",
        )
    fmax = te.moving_fmax_bf16_dst if d.dtype.name == "bfloat16" else te.moving_fmax_fp32_dst
    if n > fmax:
        return (
            f"moving free size {n} exceeds {fmax} on {ctx.target.name}",
            f"tile the moving free dim (N) to {fmax} (nl.tile_size.gemm_moving_fmax)",
        )
    if partitions(d) != mm or free_size(d) != n:
        return (f"dst {d.shape} must be [{mm}, {n}] (stationary free x moving free)", f"allocate the PSUM tile as ({mm}, {n})")


def _dtype_check(a, ctx, engine):
    s, m, d = a.stationary.dtype.name, a.moving.dtype.name, a.dst.dtype.name
    for name, dt in (("stationary", s), ("moving", m)):
        allowed = ctx.target.features.matmul_input_dtypes
        if dt not in allowed:
            return f"{name} dtype {dt} is not a Tensor Engine input type on {ctx.target.name}", f"cast to one of {allowed}"
    wide = {"float32", "tfloat32"}
    if (s in wide) != (m in wide):
        return f"stationary {s} and moving {m}: an fp32/tf32 operand needs an fp32/tf32 partner", "cast both operands to the same family"
    if {s, m} == {"float8_e4m3", "float8_e4m3fn"}:
        return "legacy float8_e4m3 and OCP float8_e4m3fn cannot be mixed", "use one fp8 flavour"
    if _double(a):
        if a.tile_size and int(a.tile_size[1]) < 128:
            return "perf_mode=double_row cannot be combined with column tiling", "drop tile_size or double_row"
        if not ctx.target.features.matmul_double_row:
            return f"perf_mode=double_row is not available on {ctx.target.name}", None
        if s not in FP8 or m not in FP8:
            return "perf_mode=double_row needs fp8 operands", "cast both operands to float8_e4m3/float8_e5m2"
        if a.stationary.ndim != 3 or a.stationary.shape[1] != 2 or a.moving.ndim != 3 or a.moving.shape[1] != 2:
            return "perf_mode=double_row needs [P, 2, F] operands", "reshape to (P, 2, F)"
    allowed = ctx.target.features.matmul_psum_dtypes
    if a.is_transpose:
        allowed = allowed + (s,)
    if d not in allowed:
        return f"dst dtype {d} on {ctx.target.name}; allowed: {', '.join(allowed)}", "allocate the PSUM tile as nl.float32"


def _bank_check(a, ctx, engine):
    d = a.dst
    if not ctx.target.features.matmul_output_within_bank or d.dyn is not None:
        return None
    _, _, lo, hi, _, _ = region(d)  # byte range of the view within each partition
    bank = ctx.target.psum.bank_bytes
    if lo // bank != (hi - 1) // bank:
        return (
            f"dst {d.shape} {d.dtype} covers bytes {lo}..{hi} of each partition, crossing a {bank}-byte PSUM bank boundary",
            "write each nc_matmul into at most 512 fp32 columns of one bank",
        )


def _matmul_attrs(a) -> dict:
    k, m, n = _km(a)
    s, mv = a.stationary.dtype.name, a.moving.dtype.name
    return {
        "K": k,
        "M": m,
        "N": n,
        "dtype": s,
        "moving_dtype": mv,
        "dst_dtype": a.dst.dtype.name,
        "fp32": s in ("float32",) or mv in ("float32",),
        "onezero": bool(a.is_stationary_onezero or a.is_moving_onezero),
        "is_transpose": bool(a.is_transpose),
        "perf_mode": "double_row" if _double(a) else "none",
        "accumulate": a.accumulate,
        "tile_size": tuple(a.tile_size or ()),
    }


def _overwrites_dst(a) -> bool:
    """Whether a matmul overwrites its dst rather than adding to it (the mode _nc_matmul picks)."""
    if a.accumulate is not None:
        return a.accumulate is False
    return a.dst.storage.acc is None or not acc_view(a.dst).any()


def _transpose_check(a, ctx, engine):
    # transpose mode loads the tile as stationary with an identity matrix as the moving tile, and from NC-v3 on
    # moves its bits (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.nc_matmul.html):
    # the result is stationary.T, [M, K], so moving is [K, K]. Another moving shape was err_internal.
    if a.is_transpose and ctx.target.features.matmul_transpose_passthrough:
        k, _, n = _km(a)
        if n != k:
            return (
                f"is_transpose=True with a moving tile of {n} columns; the transpose takes an identity [{k}, {k}] moving tile",
                f"pass a {k} x {k} identity as moving (dst is then [M, {k}])",
            )


NC_MATMUL = declare(
    "nc_matmul",
    "dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False, "
    "accumulate=None, tile_position=(), tile_size=(), perf_mode=matmul_perf_mode.none, name=None",
    ("tensor",),
    "dst = stationary.T @ moving on the Tensor Engine: SBUF inputs, fp32 accumulation into PSUM.",
    semantics="Contraction over the partition dim of both inputs; accumulate=False overwrites, True adds to the "
    "PSUM contents, None overwrites on the first write of an accumulation group and adds afterwards.",
    tiles=("dst", "stationary", "moving"),
    lazy_reads=("stationary", "moving"),  # a cached converted operand needs no bytes (psum.py)
    extra_slots=("accumulate",),  # a K loop passes accumulate=(k > 0)
    rules=(
        R.in_memory("stationary", ("sbuf",)),
        R.in_memory("moving", ("sbuf",)),
        R.in_memory("dst", ("psum",)),
        R.custom("err_invalid_argument", "perf_mode is a matmul_perf_mode (or its value as a string)", _perf_mode_check),
        R.custom(
            "err_size_of_dimension_exceed_arch_limit",
            "K = partitions <= 128 (or tile rows), M <= 128, N <= 512 (4096/8192 on trn3); dst is [M, N]",
            _matmul_check,
        ),
        R.custom(
            "err_matmul_dtype_mismatch",
            "input dtypes are Tensor Engine types; fp32/tf32 pair with fp32/tf32; dst fp32 (fp32/bf16 on trn3)",
            _dtype_check,
        ),
        R.custom("err_psum_bank_overflow", "on trn1/trn2 the output stays within one 2 KiB PSUM bank", _bank_check),
        R.custom("err_shape_mismatch", "is_transpose=True (NC-v3+) takes an identity [K, K] moving tile", _transpose_check),
    ),
    attrs=_matmul_attrs,
    flops=lambda a: 2 * math.prod(_km(a)),
    overwrites=("dst",),
    overwrite_when=_overwrites_dst,
    kind="matmul",
    cost=costs.MATMUL,
    load_cost=costs.LOAD_STATIONARY,
    perf_modes=costs.DOUBLE_ROW,
)


@NC_MATMUL.semantics_impl
def _nc_matmul(a, ctx, engine):
    k, m, n = _km(a)
    # None: a lazy copy not taken yet (tensor.py, "Lazy copies"); psum takes it only if the operand's converted
    # rows are not cached
    s_raw = None if copying(a.stationary) else np.asarray(raw(a.stationary))
    mv_raw = None if copying(a.moving) else np.asarray(raw(a.moving))
    transpose_mode = a.is_transpose and ctx.target.features.matmul_transpose_passthrough  # bits, no arithmetic
    d = a.dst
    direct = None if transpose_mode else _direct_view(d, m, n)
    if direct is not None and a.accumulate is not False and psum.continues(d):
        # the next K tile of the group open on exactly this view: every element of it was last written by a
        # matmul of the group (any other access would have computed the group), so its mask is all set
        psum.matmul(d, direct, a.stationary, a.moving, s_raw, mv_raw, k, m, n, accumulate=True)
        return
    mask = acc_view(d)
    mode = a.accumulate
    if mode is None:  # auto: accumulate where this PSUM accumulation group is open, overwrite elsewhere
        mode = True if mask.all() else (False if not mask.any() else None)
    if mode is True and not mask.all():
        warn(
            "warn_accumulate_uninitialized_psum",
            f"nc_matmul accumulate=True into PSUM {d.name!r} that no matmul "
            "initialized; undefined on hardware (start the group with accumulate=False or None)",
        )
    if direct is not None and mode is not None:
        psum.matmul(d, direct, a.stationary, a.moving, s_raw, mv_raw, k, m, n, accumulate=mode)  # fp32 PSUM view: deferred, batched
    else:
        if s_raw is None:
            s_raw = np.asarray(loaded(a.stationary))
        if mv_raw is None:
            mv_raw = np.asarray(loaded(a.moving))
        s = to_f32(s_raw, a.stationary.dtype).reshape(k, m)
        mv = to_f32(mv_raw, a.moving.dtype).reshape(k, n)
        if transpose_mode and not np.array_equal(mv, np.eye(k, dtype=np.float32)):
            warn(
                "warn_transpose_moving_not_identity",
                "nc_matmul is_transpose=True moves the stationary tile's bits and does not multiply: the moving tile "
                "is not an identity, so the result is stationary.T, not stationary.T @ moving",
            )
        res = np.ascontiguousarray(s.T) if transpose_mode else s.T @ mv
        if mode is None:
            cur = to_f32(np.asarray(raw(d)), d.dtype).reshape(m, n)
            res = np.where(mask.reshape(m, n), cur + res, res)
        elif mode:
            res = to_f32(np.asarray(raw(d)), d.dtype).reshape(m, n) + res
        store_matmul(d, res)
    mask[...] = True


def _direct_view(d, m: int, n: int):
    if d.dyn is not None or d.dtype.storage != np.float32 or d.dtype.name != "float32":
        return None
    try:
        return d._data.reshape((m, n), copy=False)
    except ValueError:
        return None


def store_matmul(d, res) -> None:
    """Write a matmul result without closing the accumulation group (store() would)."""
    acc, d.storage.acc = d.storage.acc, None
    try:
        store(d, res)
    finally:
        d.storage.acc = acc


def _transpose_engine(a, ctx) -> str:
    small = partitions(a.data) <= 32 and free_size(a.data) <= 32
    return "vector" if small else "tensor"


def _nc_transpose_check(a, ctx, engine):
    p, f = partitions(a.data), free_size(a.data)
    if partitions(a.dst) != f or free_size(a.dst) != p:
        return f"dst {a.dst.shape} must be [{f}, {p}] for data {a.data.shape}", f"allocate dst as ({f}, {p})"
    eng = engine
    limit = ctx.target.vector_engine.transpose_max if eng == "vector" else ctx.target.tensor_engine.transpose_engine_max
    if p > limit or f > limit:
        return (f"{eng} engine transposes up to {limit}x{limit}, data is {p}x{f}", "tile the transpose (TensorE 128x128, VectorE 32x32)")
    if eng == "tensor":
        if a.data.storage.kind != "sbuf" or a.dst.storage.kind != "psum":
            return ("TensorE transpose reads SBUF and writes PSUM", "put data in SBUF and dst in PSUM, or use engine=nisa.engine.vector")


NC_TRANSPOSE = declare(
    "nc_transpose",
    "dst, data, engine=engine.unknown, name=None",
    ("tensor", "vector"),
    "2-d transpose between the partition dim and the (flattened) free dims, on TensorE or VectorE.",
    semantics="dst[f, p] = data[p, f]; dst dtype equals data dtype.",
    tiles=("dst", "data"),
    rules=(
        R.same_dtype("dst", "data"),
        R.custom("err_transpose_too_large", "dst is [F, P]; TensorE <= 128x128 SBUF->PSUM, VectorE <= 32x32", _nc_transpose_check),
    ),
    choose_engine=_transpose_engine,
    attrs=lambda a: {"F": free_size(a.data), "dtype": a.data.dtype.name, "is_transpose": True},
    flops=lambda a: 2 * partitions(a.data) * free_size(a.data) * partitions(a.data),
    overwrites=("dst",),
    kind="move",
    cost=costs.PE_TRANSPOSE,
    opcode="TRANSPOSE",
    load_cost=costs.LOAD_STATIONARY,
)


@NC_TRANSPOSE.semantics_impl
def _nc_transpose(a, ctx, engine):
    p, f = partitions(a.data), free_size(a.data)
    store_raw(a.dst, np.asarray(read(a.data)).reshape(p, f).T.copy())
