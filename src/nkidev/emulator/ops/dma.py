"""DMA instructions: dma_copy, dma_transpose, dma_compute."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import costs
from nkidev.emulator import rules as R
from nkidev.emulator.alu import op_name
from nkidev.emulator.dtypes import cast_array, from_f32, to_f32
from nkidev.emulator.memory import raw, store_raw
from nkidev.emulator.opdef import declare
from nkidev.emulator.psum import identity
from nkidev.emulator.tensor import LAZY_BYTES, NkiTensor, copy_lazily, resolve_indirect


def _skip(a) -> bool:
    return getattr(getattr(a, "oob_mode", None), "name", "error") == "skip"


def _count_equal(x: str, y: str):
    def check(a, ctx, engine):
        tx, ty = getattr(a, x, None), getattr(a, y, None)
        if isinstance(tx, NkiTensor) and isinstance(ty, NkiTensor) and tx.size != ty.size:
            return (
                f"{x} {tx.shape} has {tx.size} elements but {y} {ty.shape} has {ty.size}",
                "slice both sides to the same number of elements",
            )

    return R.custom("err_element_count_mismatch", f"{x} and {y} hold the same number of elements", check)


def _dge_mode(a) -> str:
    """The call's dge_mode by name ("unknown" when not given)."""
    return getattr(getattr(a, "dge_mode", None), "name", "unknown")


def _dma_options(a, ctx, engine):
    # the dma_copy page's parameters (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.dma_copy.html):
    # engine is nki.isa.engine.sync or .scalar, the HWDGE descriptor generator, only valid with dge_mode=hwdge;
    # priority is a QoS level 0-3 (NeuronCore-v4+ only)
    mode = _dge_mode(a)
    eng = getattr(a.engine, "name", a.engine)
    if eng not in (None, "unknown"):
        if eng not in ("sync", "scalar"):
            return f"engine={eng}: the HWDGE engine is nki.isa.engine.sync or nki.isa.engine.scalar", "pass sync or scalar"
        if mode in ("none", "swdge"):
            return f"engine={eng} with dge_mode={mode}: engine only applies to dge_mode=hwdge", "pass dge_mode=nisa.dge_mode.hwdge"
    return _priority_check(a)


def _priority_check(a):
    p = a.priority
    if p is not None:
        if not isinstance(p, int | np.integer) or isinstance(p, bool) or not 0 <= int(p) <= 3:
            return f"priority={p!r} is not a QoS level 0-3", "pass 0 (highest) to 3"


def _dma_transpose_modes(a, ctx, engine):
    # the dma_transpose page (v2.32.0): a direct transpose takes dge_mode unknown or hwdge, an indirect one (src
    # gathered through .ap(vector_offset=...)) unknown or swdge; oob_mode=skip only with an indirect src;
    # priority is 0-3. dge_mode=none, swdge on a direct src and oob_mode=skip there were accepted and ignored.
    mode = _dge_mode(a)
    indirect = a.src.dyn is not None and a.src.dyn.mode == "vector"
    allowed = ("unknown", "swdge") if indirect else ("unknown", "hwdge")
    if mode not in allowed:
        kind = "an indirect" if indirect else "a direct"
        return (
            f"dge_mode={mode} for {kind} transpose; it takes {' or '.join(allowed)}",
            f"pass dge_mode=nisa.dge_mode.{allowed[1]} or drop it",
        )
    if getattr(a.oob_mode, "name", a.oob_mode) == "skip" and not indirect:
        return "oob_mode=skip on a direct transpose: only an indirect src has indices to skip", "drop oob_mode"
    return _priority_check(a)


def _hwdge(a, ctx, engine):
    mode = _dge_mode(a)
    if mode == "hwdge":
        if not ctx.target.features.hwdge:
            return f"dge_mode=hwdge is not available on {ctx.target.name}", "use dge_mode=nisa.dge_mode.unknown"
        # HWDGE moves raw bytes: source and destination dtypes must match (migration guide, NKI 0.3.0 section
        # "dma_copy - dge_mode type matching", https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/migration/index.html)
        if isinstance(a.dst, NkiTensor) and isinstance(a.src, NkiTensor) and a.dst.dtype != a.src.dtype:
            return (f"dge_mode=hwdge cannot cast {a.src.dtype} -> {a.dst.dtype}", "use equal dtypes or dge_mode=nisa.dge_mode.unknown")


def _dma_attrs(a) -> dict:
    mode = _dge_mode(a)
    if isinstance(a.src, NkiTensor) and (a.src.dyn is not None or a.dst.dyn is not None):
        mode = "swdge" if mode == "unknown" else mode
    trigger = getattr(getattr(a, "engine", None), "name", "unknown")
    dynamic = a.src.dyn is not None or a.dst.dyn is not None
    return {
        "dge_mode": mode,
        "src_dtype": a.src.dtype.name,
        "dst_dtype": a.dst.dtype.name,
        "queue": getattr(a, "name", None),
        "trigger_engine": trigger,
        "dynamic": dynamic,
    }


DMA_COPY = declare(
    "dma_copy",
    "dst, src, priority=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, engine=engine.unknown, name=None",
    ("dma",),
    "Copy src to dst with the DMA engines (HBM<->SBUF, HBM<->HBM, SBUF<->SBUF), casting through fp32.",
    semantics="dst = src (element order preserved; dtype converted src -> fp32 -> dst).",
    rules=(
        R.tensor_required("dst"),
        R.tensor_required("src"),
        R.in_memory("dst", ("hbm", "sbuf")),
        R.custom(
            "err_dma_from_psum",
            "src is not in PSUM (DMA cannot read PSUM)",
            lambda a, ctx, engine: (
                (f"src {a.src.name!r} is in PSUM", "copy it to SBUF with nisa.tensor_copy first") if a.src.storage.kind == "psum" else None
            ),
        ),
        _count_equal("dst", "src"),
        R.custom("err_invalid_argument", "dge_mode=hwdge needs trn2+ and equal dtypes", _hwdge),
        R.custom("err_invalid_argument", "engine is sync/scalar with dge_mode=hwdge; priority is 0-3", _dma_options),
    ),
    attrs=_dma_attrs,
    flops=lambda a: 0,
    overwrites=("dst",),
    kind="move",
    cost=costs.TRANSFER,
    deferrable=True,
)


@DMA_COPY.semantics_impl
def _dma_copy(a, ctx, engine):
    src, dst = a.src, a.dst
    if (
        src.dyn is None
        and dst.dyn is None
        and src.dtype is dst.dtype
        and src._data.shape == dst._data.shape
        and src.storage.pending is None
        and dst.storage.pending is None
        and dst.storage.acc is None
    ):
        st = dst.storage
        if st.borrowed:
            st.keep_original()
        source = src.storage
        if source.origin is None and dst._data.size == st.array.size and dst._data.flags.c_contiguous:
            # a whole tile loaded from a view: it holds that view's values (a reloaded matmul operand is
            # converted once, psum.identity); dispatch cleared the origin it had before this write. A copy of
            # a copy gets none, so origins never nest.
            if source.kind == "hbm" and st.kind == "sbuf" and st.nbytes >= LAZY_BYTES and st.unfilled is None and ctx.barrier is None:
                # copied when first read, if ever (tensor.py, "Lazy copies"); here on the kernel's thread: on the
                # worker every storage of the instruction is pending (deferred.py), so no fast path runs there
                copy_lazily(st, src._data, source)
            else:
                dst._data[...] = src._data
            st.origin = identity(src)
            return
        dst._data[...] = src._data  # the common case: one copy, no reshape or cast
        return
    skip = _skip(a)
    values = raw(a.src, skip)
    values = cast_array(np.asarray(values), a.src.dtype, a.dst.dtype)
    if skip and src.dyn is not None and dst.dyn is None:
        # oob_mode=skip skips the transfer of out-of-bounds rows: their destination keeps its values
        _, idx = resolve_indirect(src, True)
        keep = (idx >= 0).reshape(-1)
        values = np.where(keep, values.reshape(-1), np.asarray(raw(dst)).reshape(-1))
    store_raw(a.dst, values.reshape(-1) if a.dst.dyn is None else values, skip)


def _transpose_axes(a) -> tuple[int, ...] | None:
    nd = a.src.ndim
    default = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(nd)
    if a.axes is not None and not (isinstance(a.axes, list | tuple) and all(isinstance(x, int) for x in a.axes)):
        return None  # not a tuple of ints: the check reports it with the allowed values
    axes = tuple(a.axes) if a.axes is not None else default
    return axes


def _dma_transpose_check(a, ctx, engine):
    axes = _transpose_axes(a)
    if axes not in ((1, 0), (2, 1, 0), (3, 1, 2, 0)):
        return (f"axes={axes} for a {a.src.ndim}-d source", "use (1, 0), (2, 1, 0) or (3, 1, 2, 0)")
    want = tuple(a.src.shape[i] for i in axes)
    if tuple(a.dst.shape) != want:
        return (f"dst shape {a.dst.shape} must equal the transposed source shape {want}", f"allocate dst with shape {want}")
    if getattr(getattr(a, "dge_mode", None), "name", "") == "hwdge":
        s = a.src.shape
        if a.src.dtype.itemsize != 2:
            return f"hwdge transpose needs a 2-byte dtype, got {a.src.dtype}", "transpose bf16/fp16 data"
        if s[-1] > 128:
            return f"hwdge transpose needs src.shape[-1] <= 128, got {s[-1]}", "tile the last dim to 128"
        if len(s) == 2 and s[0] != 16 or len(s) > 2 and (s[0] not in (1, 2, 4, 8, 16) or (s[0] * s[-2]) % 16):
            return (
                f"hwdge transpose source shape {s} is not supported",
                "2-d: src.shape[0] == 16; 3/4-d: src.shape[0] in {1,2,4,8,16} and src.shape[0]*src.shape[-2] % 16 == 0",
            )


DMA_TRANSPOSE = declare(
    "dma_transpose",
    "dst, src, axes=None, priority=None, dge_mode=dge_mode.unknown, oob_mode=oob_mode.error, name=None",
    ("dma",),
    "Transpose src into dst with the DMA engines (2-d [1,0], 3-d [2,1,0], 4-d [3,1,2,0]).",
    semantics="dst = np.transpose(src, axes)",
    rules=(
        R.tensor_required("dst"),
        R.tensor_required("src"),
        R.in_memory("dst", ("sbuf",)),
        R.in_memory("src", ("hbm", "sbuf")),
        R.same_dtype("dst", "src"),
        R.custom("err_shape_mismatch", "dst is the transposed src (same rank); hwdge shape limits", _dma_transpose_check),
        R.custom(
            "err_invalid_argument",
            "dge_mode unknown/hwdge (direct) or unknown/swdge (indirect); oob_mode=skip only indirect; priority 0-3",
            _dma_transpose_modes,
        ),
    ),
    attrs=lambda a: dict(_dma_attrs(a), transpose=True),
    flops=lambda a: 0,
    overwrites=("dst",),
    kind="move",
    cost=costs.TRANSFER,
)


@DMA_TRANSPOSE.semantics_impl
def _dma_transpose(a, ctx, engine):
    values = np.transpose(np.asarray(raw(a.src, _skip(a))), _transpose_axes(a))
    store_raw(a.dst, values)


def _compute_check(a, ctx, engine):
    if op_name(a.reduce_op) != "add":
        return "reduce_op must be nl.add", "pass reduce_op=nl.add"
    if not isinstance(a.srcs, list | tuple) or not all(isinstance(s, NkiTensor) for s in a.srcs):
        return f"srcs={a.srcs!r} must be a list of tiles", "pass srcs=[t1, t2, ...]"
    if not a.srcs or len(a.srcs) > 16:
        return f"{len(a.srcs or [])} sources; 1 to 16 are supported", "pass between 1 and 16 source tensors"
    if a.scales is not None and (
        not isinstance(a.scales, list | tuple) or any(not isinstance(s, int | float) or float(s) != 1.0 for s in a.scales)
    ):
        return "scales must all be 1.0", "drop the scales or pass 1.0"
    for s in a.srcs:
        if s.size != a.dst.size:
            return f"source {s.shape} and dst {a.dst.shape} differ in size", "use equal element counts"


DMA_COMPUTE = declare(
    "dma_compute",
    "dst, srcs, reduce_op, scales=None, unique_indices=True, oob_mode=oob_mode.error, name=None",
    ("dma",),
    "Element-wise reduction of several sources inside the DMA engines: dst = srcs[0] + srcs[1] + ...",
    semantics="dst = sum(src * scale for src, scale in zip(srcs, scales)) in fp32",
    rules=(
        R.tensor_required("dst"),
        R.custom("err_invalid_argument", "reduce_op is nl.add, scales are 1.0, 1-16 sources of dst's size", _compute_check),
    ),
    attrs=lambda a: {"dge_mode": "none", "dst_dtype": a.dst.dtype.name, "sources": len(a.srcs)},
    flops=lambda a: a.dst.size * max(0, len(a.srcs) - 1),
    overwrites=("dst",),
    kind="compute",
    cost=costs.TRANSFER,
)


@DMA_COMPUTE.semantics_impl
def _dma_compute(a, ctx, engine):
    total = np.zeros(a.dst.size, np.float32)
    for s in a.srcs:
        total += to_f32(np.asarray(raw(s)), s.dtype).reshape(-1)
    store_raw(a.dst, from_f32(total, a.dst.dtype))
