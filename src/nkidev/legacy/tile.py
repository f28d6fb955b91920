"""Legacy tiles: NkiTensor views with the Beta-1 indexing, assignment and block-dimension semantics.

- `LegacyTensor` is an NkiTensor (same storages, so every rule, trace record and profile of the current API
  applies) that also remembers which of its dims is the partition dim (`nl.par_dim`: the dims in front of it
  are block dims), which part of it a masked instruction wrote (`valid`), and which instruction produced it.
- Subscripts with `nl.arange`/`nl.mgrid` expressions give an `Indexed` view: an affine access pattern resolved
  (and bounds-checked) only for the box of it an instruction's mask selects, so masked-off indices may run past
  the tensor as the legacy docs allow.
- `t[idx] = op(...)` makes the op write into `t[idx]`, as the legacy compiler does: the op ran into a fresh
  tile, and when nothing else has used that tile yet its instruction is re-pointed at `t[idx]` (the values are
  moved, the trace record's destination is patched) instead of adding a copy.

Sources: SDK 2.26 general/nki/programming_model.rst, nki_block_dimension_migration_guide.rst,
test/test_nki_memory_semantics.py (https://github.com/aws-neuron/aws-neuron-sdk/tree/49ee15c5/general/nki).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator.dtypes import is_uninitialized, to_nki_dtype
from nkidev.emulator.location import rule_error
from nkidev.emulator.memory import acc_view, raw, store_raw
from nkidev.emulator.tensor import UNFILLED, DynSlice, MemoryRegion, NkiTensor, access, allocate, free_size, partitions
from nkidev.legacy.index import Box, IndexExpr, Mask, MGrid, is_empty


class ParDim(int):
    """nl.par_dim(n): marks the partition dim of a shape; dims in front of it are block dims."""


def par_dim(n) -> ParDim:
    return ParDim(int(n))


_STRING_BUFFERS = {
    "sbuf": MemoryRegion.sbuf,
    "psum": MemoryRegion.psum,
    "hbm": MemoryRegion.private_hbm,
    "private_hbm": MemoryRegion.private_hbm,
    "shared_hbm": MemoryRegion.shared_hbm,
}


def to_region(buffer) -> MemoryRegion:
    """Legacy buffers: None (SBUF), nl.* regions, their names, and ncc.sbuf/psum allocators."""
    if buffer is None:
        return MemoryRegion.sbuf
    if isinstance(buffer, MemoryRegion):
        return buffer
    if isinstance(buffer, str) and buffer in _STRING_BUFFERS:
        return _STRING_BUFFERS[buffer]
    region = getattr(buffer, "region", None)  # ncc.sbuf.mod_alloc(...) and friends
    if isinstance(region, MemoryRegion):
        return region
    raise rule_error("err_invalid_argument", f"buffer={buffer!r}", "pass nl.sbuf, nl.psum, nl.hbm or nl.shared_hbm")


class LegacyTensor(NkiTensor):
    """A legacy tensor view: `par` is the index of its partition dim (0 for tiles)."""

    __slots__ = ("par", "valid", "origin", "redo")

    def __init__(self, data, storage, dtype, dyn=None, par: int = 0):
        super().__init__(data, storage, dtype, dyn)
        self.par = par
        self.valid: Box | None = None  # the box a masked instruction wrote (None: all of it)
        self.origin: int | None = None  # id the instruction after the one that produced it will get
        self.redo = None  # matmul results: (dst, accumulate) -> issue the same matmul into dst

    def _new(self, data) -> LegacyTensor:
        return LegacyTensor(data, self.storage, self.dtype, par=self.par)

    def __getitem__(self, key):
        return index(self, key)

    def __setitem__(self, key, value) -> None:
        spare = sys.getrefcount(value) <= _SETITEM_REFS  # nobody else holds the value: its producer may write here
        assign(index(self, key), value, spare)

    @property
    def is_tile(self) -> bool:
        return self.par == 0

    def assert_shape(self, shape) -> LegacyTensor:
        if tuple(self.shape) != tuple(shape):
            raise rule_error("err_annotation_shape_mismatch", f"tensor {self.name!r} has shape {self.shape}, expected {tuple(shape)}")
        return self

    def expand_dims(self, axis) -> LegacyTensor:
        return self.expand_dim(int(axis))


def as_legacy(t):
    """Kernel arguments and current-API tensors as legacy views of the same storage (anything else unchanged)."""
    if isinstance(t, LegacyTensor) or not isinstance(t, NkiTensor):
        return t
    return LegacyTensor(t._data, t.storage, t.dtype, t.dyn)


def wrap_args(value):
    if isinstance(value, NkiTensor):
        return as_legacy(value)
    if isinstance(value, tuple):
        return tuple(wrap_args(v) for v in value)
    if isinstance(value, list):
        return [wrap_args(v) for v in value]
    return value


# ---------------------------------------------------------------- allocation


def new_tile(shape, dtype, buffer=None, name: str = "") -> LegacyTensor:
    """nl.ndarray of the legacy API: buffer None is SBUF; a nl.par_dim that is not leftmost makes block dims.

    Block tensors are stored partition-major (P, blocks..., free...) and shown as (blocks..., P, free...), so
    indexing away the block dims yields an ordinary tile. The compiler keeps only some blocks live, so one
    block's bytes count against SBUF capacity."""
    dims = [shape] if isinstance(shape, int | np.integer) else list(shape)
    par = next((i for i, d in enumerate(dims) if isinstance(d, ParDim)), 0)
    region = to_region(buffer)
    dims = [int(d) for d in dims]
    dt = to_nki_dtype(dtype)
    if par == 0 or region in (MemoryRegion.private_hbm, MemoryRegion.shared_hbm):
        t = allocate(tuple(dims), dt, region, name)
        return LegacyTensor(t._data, t.storage, t.dtype)
    storage_shape = (dims[par], *dims[:par], *dims[par + 1 :])
    block_bytes = math.prod(dims[par + 1 :]) * dt.itemsize
    t = allocate(storage_shape, dt, region, name, live_bytes=block_bytes)
    view = np.moveaxis(t._data, 0, par)
    return LegacyTensor(view, t.storage, t.dtype, par=par)


def result_tile(shape, dtype, buffer=MemoryRegion.sbuf) -> LegacyTensor:
    t = allocate(tuple(int(s) for s in shape) or (1, 1), to_nki_dtype(dtype), buffer)
    return LegacyTensor(t._data, t.storage, t.dtype)


# ---------------------------------------------------------------- indexing


def _is_advanced(k) -> bool:
    return isinstance(k, IndexExpr | NkiTensor | Mask | MGrid | Dyn | Indexed)


def index(t: LegacyTensor, key):
    """t[key]: a view for ints/slices/nl.ds, an `Indexed` access pattern when the key has index expressions."""
    key = tuple(key) if isinstance(key, tuple | MGrid) else (key,)
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:at] + (slice(None),) * (t.ndim - len(key) + 1) + key[at + 1 :]
    if len(key) > t.ndim:
        raise rule_error(
            "err_tensor_access_out_of_bound", f"{len(key)} indices for tensor {t.name!r} of rank {t.ndim}", "use one index per dim"
        )
    if not any(_is_advanced(k) for k in key):
        return _basic(t, key)
    if len(key) == 1 and isinstance(key[0], Mask):
        return Masked(t, key[0])
    if len(key) == 1 and isinstance(key[0], bool | np.bool_):
        return Masked(t, Mask(()))
    if any(isinstance(k, Mask) for k in key):
        raise rule_error("err_legacy_index", "a mask inside a subscript with other indices", "mask the whole operand: tile[...][mask]")
    if any(isinstance(k, slice | DynSlice) for k in key) or len(key) < t.ndim:
        raise rule_error(
            "err_unsupported_mixing_basic_advanced_tensor_indexing",
            f"tensor {t.name!r} is indexed with slices and nl.arange expressions in one subscript",
            "index every dim with an nl.arange/nl.mgrid expression (or an int), or use only slices",
        )
    comps = []
    for k in key:
        if isinstance(k, NkiTensor | Indexed):
            k = Dyn(k, IndexExpr((), 0, {}))
        if isinstance(k, Dyn):
            comps.append(k)
        elif isinstance(k, IndexExpr):
            if k.ndim == 1 and k.shape[0] > 1:
                raise rule_error(
                    "err_1d_arange_not_supported", "a 1-d nl.arange is used as an index", "use nl.arange(n)[:, None] or [None, :]"
                )
            comps.append(k)
        else:
            comps.append(IndexExpr((), int(k), {}))
    return Indexed(t, tuple(comps))


def _basic(t: LegacyTensor, key: tuple) -> LegacyTensor:
    norm, par = [], t.par
    for dim, k in enumerate(key):
        if isinstance(k, int | np.integer) and not isinstance(k, bool):
            n = t.shape[dim]
            k = int(k)
            if not -n <= k < n:
                raise rule_error(
                    "err_tensor_access_out_of_bound",
                    f"index {k} is out of bounds for dim {dim} of {t.name!r} with size {n}",
                    f"use [0, {n})",
                )
            k %= n
            if dim == t.par and t.is_on_chip:
                norm.append(slice(k, k + 1))  # the partition dim stays (a 1-partition tile)
            else:
                norm.append(k)
                par -= 1 if dim < t.par else 0
        else:
            problems: list[str] = []
            norm.append(t._norm_index(dim, k, problems))
            if problems:  # the legacy front end checks views when they are made
                raise rule_error("err_tensor_access_out_of_bound", problems[0], "keep indices and slices within the tensor")
    return LegacyTensor(t._data[tuple(norm)], t.storage, t.dtype, par=par)


class Masked:
    """Operand masking, `tile[i_f < n]` (matmul operands): the part of the operand the instruction may read.

    Masked-off results are undefined, so the emulator computes the free dims whole and restricts only the
    partition (contraction) dim, whose masked-off rows would otherwise leak into every result."""

    __slots__ = ("base", "mask")

    def __init__(self, base, mask: Mask):
        self.base, self.mask = base, mask

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.base.shape)

    @property
    def dtype(self):
        return self.base.dtype

    def __getitem__(self, key):
        if isinstance(key, Mask):
            return Masked(self.base, self.mask & key)
        if isinstance(key, bool | np.bool_):  # a comparison of loop indices only: the whole operand or none
            return self
        raise rule_error("err_legacy_index", "indexing a masked operand", "index the tile first, then mask it")

    def resolve(self) -> LegacyTensor:
        from_box = self.mask.box(self.shape)
        base = self.base.resolve() if isinstance(self.base, Indexed) else as_legacy(self.base)
        if from_box is None or base.ndim == 0:
            return base
        p0, pn = from_box[0]
        return base[p0 : p0 + pn] if (p0, pn) != (0, base.shape[0]) else base


class Dyn:
    """A run-time index: the value(s) of an integer tile plus an affine expression (`offsets[0, i] + iy`).

    A (1, 1) tile is a scalar offset of its dim (`.ap(scalar_offset=...)`); a (P, 1) tile gives one offset per
    partition (`.ap(vector_offset=...)`, an indirect DMA)."""

    __slots__ = ("tile", "expr")

    def __init__(self, tile, expr: IndexExpr):
        self.tile, self.expr = tile, expr

    @property
    def vector(self) -> bool:
        return self.tile.shape[0] > 1 if self.tile.ndim else False

    @property
    def shape(self) -> tuple[int, ...]:
        tile_shape = (self.tile.shape[0], 1) if self.vector else ()
        return tuple(np.broadcast_shapes(self.expr.shape, tile_shape))

    def __add__(self, other):
        if isinstance(other, IndexExpr | int | np.integer):
            return Dyn(self.tile, self.expr + other)
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, IndexExpr | int | np.integer):
            return Dyn(self.tile, self.expr - other)
        return NotImplemented


class Indexed:
    """t[index expressions]: an affine access pattern over t, resolved for a box when an instruction uses it."""

    __slots__ = ("base", "comps", "shape")
    __array_priority__ = 150

    def __init__(self, base: LegacyTensor, comps: tuple[IndexExpr, ...]):
        self.base = base
        self.comps = comps
        shape: tuple[int, ...] = ()
        for c in comps:
            try:
                shape = tuple(np.broadcast_shapes(shape, c.shape))
            except ValueError:
                raise rule_error("err_legacy_index", f"index expressions of shapes {shape} and {c.shape} do not broadcast") from None
        self.shape = shape

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def storage(self):
        return self.base.storage

    @property
    def buffer(self):
        return self.base.buffer

    @property
    def name(self) -> str:
        return self.base.name

    def __repr__(self) -> str:
        return f"Indexed({self.base.name!r}, shape={self.shape})"

    def __getitem__(self, key):
        return index(self.resolve(), key)

    def __setitem__(self, key, value) -> None:
        assign(index(self.resolve(), key), value, False)

    def resolve(self, box: Box | None = None) -> LegacyTensor | None:
        """The view of the box (per axis of `shape`: start, length) of this pattern; None for an empty box."""
        shape = self.shape
        rank = len(shape)
        if box is None:
            box = tuple((0, n) for n in shape)
        if is_empty(box):
            return None
        base = self.base
        strides = base.strides
        offset = 0
        steps = [0] * rank
        dynamic = None
        for dim, c in enumerate(self.comps):
            if isinstance(c, Dyn):
                if dynamic is not None:
                    raise rule_error("err_legacy_index", f"two run-time indices into {base.name!r}", "use one tile of indices per access")
                dynamic = (dim, c)
                c = c.expr
            if not c.affine:
                raise rule_error(
                    "err_legacy_index", f"a non-affine index expression on dim {dim} of {base.name!r}", "use + - and * by ints only"
                )
            const = c.const
            lo = hi = 0
            for axis, coef in c.coef.items():
                if c.shape[axis] == 1:
                    continue  # broadcast: constant along this axis
                j = rank + axis
                start, n = box[j]
                const += coef * start
                steps[j] += coef * strides[dim]
                lo += min(0, coef * (n - 1))
                hi += max(0, coef * (n - 1))
            size = base.shape[dim]
            if dynamic is not None and dynamic[0] == dim:
                pass  # checked when the access runs (oob_mode)
            elif const + lo < 0 or const + hi >= size:
                raise rule_error(
                    "err_tensor_access_out_of_bound",
                    f"index range [{const + lo}, {const + hi}] exceeds dimension size {size} of dim {dim} of {base.name!r}",
                    "mask off the out-of-range indices (mask=...) or shrink the index expression",
                )
            offset += const * strides[dim]
        pattern = [[steps[j], box[j][1]] for j in range(rank)] or [[1, 1]]
        if dynamic is not None:
            return _dynamic_view(base, dynamic, pattern, offset, box)
        if base.is_on_chip and rank and box[0][1] > 1 and steps[0] != base.storage.pstride // base._data.itemsize:
            raise rule_error(
                "err_partition_stride_not_supported",
                f"the first index of {base.name!r} does not walk its partitions one by one",
                "put the partition index nl.arange(P)[:, None] (coefficient 1) on the first axis",
            )
        view = base.ap(pattern, offset=offset)
        data = view._data if rank else view._data.reshape(())
        return LegacyTensor(data, view.storage, view.dtype)


def _dynamic_view(base: LegacyTensor, dynamic, pattern, offset: int, box) -> LegacyTensor:
    """The run-time addressed view: `.ap(scalar_offset=tile)` (a 1x1 tile) or `.ap(vector_offset=tile)` (P x 1)."""
    dim, d = dynamic
    if base.dyn is not None or base._data.__array_interface__["data"][0] != base.storage.ptr:
        raise rule_error("err_legacy_index", f"a run-time index into a view of {base.name!r}", "index the whole tensor")
    tile = d.tile.resolve() if isinstance(d.tile, Indexed) else d.tile
    if not tile.dtype.is_int:
        raise rule_error("err_legacy_index", f"index tile {tile.name!r} is {tile.dtype}", "use an integer tile of indices")
    if d.vector:
        p0, pn = box[0]
        index = tile[p0 : p0 + pn]
        view = base.ap(pattern, offset=offset, vector_offset=index, indirect_dim=dim)
    else:
        view = base.ap(pattern, offset=offset, scalar_offset=tile, indirect_dim=dim)
    return LegacyTensor(view._data, view.storage, view.dtype, view.dyn)


# ---------------------------------------------------------------- operands of an instruction


def tile_of(x, box: Box | None = None, rank: int | None = None):
    """An operand as the LegacyTensor view an instruction uses: Indexed patterns resolved, the box (of the
    instruction's iteration space, aligned right like NumPy broadcasting) applied; numbers unchanged."""
    if isinstance(x, Masked):
        x = x.resolve()
    if isinstance(x, Indexed):
        return x.resolve(_align(box, x.shape, rank))
    if isinstance(x, NkiTensor):
        x = as_legacy(x)
        b = _align(box, x.shape, rank)
        if b is None:
            return x
        key = tuple(slice(s, s + n) for s, n in b)
        return LegacyTensor(x._data[key], x.storage, x.dtype, par=x.par)
    return x


def _align(box: Box | None, shape: tuple[int, ...], rank: int | None) -> Box | None:
    """The part of an iteration-space box that applies to an operand of `shape` (broadcast axes stay whole)."""
    if box is None:
        return None
    rank = len(box) if rank is None else rank
    lead = rank - len(shape)
    return tuple((0, n) if n == 1 or lead + i < 0 else box[lead + i] for i, n in enumerate(shape))


def need_tile(x, what: str):
    """A compute operand must be a tile: its partition dim first (no block dims left)."""
    if isinstance(x, LegacyTensor) and x.par != 0:
        raise rule_error(
            "err_failed_to_infer_tile_from_local_tensor",
            f"{what} {x.name!r} of shape {x.shape} has block dims in front of its partition dim",
            "index away the block dims first, e.g. t[i] or t[i, j]",
        )
    return x


# ---------------------------------------------------------------- results and assignment


def produced(t: LegacyTensor, box: Box | None = None) -> LegacyTensor:
    """Mark t as the fresh result of the instruction that just ran (over `box` of it, when masked)."""
    t.valid = box if box is not None and not all(s == 0 and n == dim for (s, n), dim in zip(box, t.shape)) else None
    t.origin = _ctx.current().counter[0]
    return t


def _fresh(value: LegacyTensor) -> bool:
    """Nothing has run since value's producer (only knowable when the trace is recorded)."""
    ctx = _ctx.current()
    return value.origin is not None and ctx.trace is not None and value.origin == ctx.counter[0]


class AssignedValue:
    """A value computed from the tensor it is assigned to (`dst[...] = nl.loop_reduce(x, ...)` is op(dst, x))."""

    def value_for(self, dst) -> NkiTensor:
        raise NotImplementedError


def assign(dst, value, spare: bool) -> None:
    """`dst = value` into an existing tensor: the producing instruction writes dst when it can, else a copy."""
    if isinstance(value, AssignedValue):
        value, spare = value.value_for(dst), True
    if isinstance(value, bool | int | float | np.number):
        target = tile_of(dst)
        if target.storage.kind == "hbm":
            raise rule_error(
                "err_hbm_tensor_with_init_value_not_supported", "assigning a constant to an HBM tensor", "fill an SBUF tile and store it"
            )
        _COPY.memset(target, value)
        return
    if isinstance(value, Indexed):
        value, spare = value.resolve(), False
    if not isinstance(value, NkiTensor):
        raise rule_error("err_invalid_argument", f"cannot assign a {type(value).__name__} to a tensor", "assign a tile or a number")
    value = as_legacy(value)
    box = value.valid if isinstance(value, LegacyTensor) else None
    same_shape = tuple(dst.shape) == tuple(value.shape)
    if box is not None and not same_shape:
        box = None
    target = tile_of(dst, box)
    if target is None:
        return
    src = tile_of(value, box)
    if target.storage is src.storage and target._data.__array_interface__["data"] == src._data.__array_interface__["data"]:
        if target.shape == src.shape and target.strides == src.strides:
            return  # t[...] = t[...] (and `t[k] += x`, whose __iadd__ already wrote t[k])
    if spare and retarget(target, value, src):
        return
    _COPY.copy(target, src)


def retarget(target: LegacyTensor, value: LegacyTensor, src: LegacyTensor, accumulate: bool = False) -> bool:
    """Make the instruction that produced `value` (nothing has run since) write `target` instead, as the legacy
    compiler does for `t[...] = op(...)` and `psum += matmul(...)`. A matmul is re-issued into target (so PSUM
    accumulation groups stay batched); any other op has its values moved and its trace record re-pointed.
    False when it cannot: something ran since, another memory or dtype, another shape."""
    if not _fresh(value) or target.storage.kind != value.storage.kind or target.dtype != value.dtype:
        return False
    if partitions(target) != partitions(src) or free_size(target) != free_size(src) or target.dyn is not None:
        return False
    ctx = _ctx.current()
    if value.redo is not None and ctx.trace is not None and ctx.trace.instructions and src is value:
        ctx.trace.instructions.pop()  # the matmul into the fresh tile; its deferred group is dropped with the tile
        ctx.counter[0] -= 1
        ctx.trace.tensors.pop(value.storage.id, None)
        value.storage.pending = UNFILLED if value.storage.unfilled is not None else None
        value.redo(target, _accumulate_mode(target) if accumulate else False)
        value.origin = None
        return True
    values = np.asarray(raw(src))
    if accumulate and not _never_written(target):  # else the first matmul of the group overwrites (see below)
        values = (np.asarray(raw(target), dtype=np.float32).reshape(-1) + values.astype(np.float32).reshape(-1)).astype(
            target.dtype.storage
        )
    store_raw(target, values.reshape(-1))
    target.storage.written = True
    if ctx.trace is not None and ctx.trace.instructions:
        ins = ctx.trace.instructions[-1]  # a snapshot: edited, then put back
        for i, w in enumerate(ins.writes):
            if w.tensor == value.storage.id:
                ins.writes[i] = access(target, w.role)
        if accumulate:
            ins.attrs = dict(ins.attrs, accumulate=True)  # attrs are shared by every instruction of the same form
        if ins.writes:
            ins.partitions = ins.writes[0].partitions
        ctx.trace.replace_last(ins)
        ctx.trace.tensors.pop(value.storage.id, None)
    value.origin = None
    return True


def _accumulate_mode(target: LegacyTensor):
    """`psum += matmul`: add to an open accumulation group; a zero-filled tile (the nl.zeros idiom) or one no
    instruction wrote yet (an nl.ndarray) is overwritten, opening the group; anything else (values another
    instruction left) gets an explicit accumulate=True.

    Why a never-written tile opens the group: the legacy nc_matmul has no overwrite/accumulate field, the compiler
    derives it from the `+=` pattern, and the first matmul of an accumulation group overwrites the bank (SDK 2.26
    arch guide, "Near-memory accumulation in PSUM",
    https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.0/general/nki/arch/trainium_inferentia2_arch.html).
    Kernels shipped as nki.kernels (allocated_fused_rms_norm_qkv, allocated_fused_self_attn_for_SD_small_head_size)
    and the attention tutorial's v8a-v11 `+=` into a PSUM nl.ndarray never zeroed, and their tests compare the
    result with NumPy in simulation."""
    st = target.storage
    if st.acc is not None and acc_view(target).all():
        return True
    return bool(np.any(raw(target))) and not _never_written(target)


def _never_written(target: LegacyTensor) -> bool:
    """Whether target still holds this run's fresh-allocation fill (no instruction wrote it)."""
    return is_uninitialized(np.asarray(raw(target)), target.dtype, _ctx.current().options.fill)


class _Copies:
    """The copy/fill instructions assignment needs; installed by the legacy language module (it owns nl.*)."""

    copy = None  # (dst, src) -> None
    memset = None  # (dst, value) -> None


_COPY = _Copies()


class _Probe:
    """Measures how many references a value passed to __setitem__ has when only the statement holds it."""

    def __setitem__(self, key, value) -> None:
        self.refs = sys.getrefcount(value)

    def __iadd__(self, value):
        self.iadd_refs = sys.getrefcount(value)
        return self


def _baseline() -> tuple[int, int]:
    probe = _Probe()
    probe[0] = object()
    probe += object()
    return probe.refs, probe.iadd_refs


_SETITEM_REFS, IADD_REFS = _baseline()
