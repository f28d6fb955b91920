"""`neuronxcc.nki.language` (NKI Beta 1, Neuron SDK <= 2.26) built on the current `nki.language` / `nki.isa`.

Every legacy call lowers to current instructions, so the rules, the trace and the profile are the current
API's: `nl.load` allocates an SBUF tile and issues `nisa.dma_copy`, `nl.exp(x)` is an `activation` into a
new tile, binary ops broadcast NumPy-style (free-dim broadcasts read a stride-0 view, partition broadcasts
copy first), `mask=` shrinks the instruction to the box it selects. Results are new tiles (SBUF unless
documented otherwise); their dtype is the input's, or the legacy promotion of two inputs, where a Python
scalar counts as the widest type of its kind (float -> fp32, int -> int32).

Sources: SDK 2.26 general/nki/api/nki/language/__init__.py (signatures and defaults),
general/nki/api/nki.api.shared.rst ("NKI Type Promotion", "Weakly Typed Scalar Type Inference", "NKI API
Masking"), https://github.com/aws-neuron/aws-neuron-sdk/tree/49ee15c58418d5f19b2407bc7057a7beb77ab24a/general/nki.
"""

from __future__ import annotations

import dis
import math as _math
import sys

import ml_dtypes
import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator import isa as nisa
from nkidev.emulator import language as cur
from nkidev.emulator.alu import op_name as _op_name
from nkidev.emulator.dtypes import NkiDType, is_uninitialized, lookup, to_nki_dtype
from nkidev.emulator.location import is_internal, kernel_location, rule_error
from nkidev.emulator.memory import f32, raw
from nkidev.emulator.rules import aligned
from nkidev.emulator.tensor import MemoryRegion, NkiTensor, free_size, partition_start, partitions
from nkidev.errors import NkiNotSupportedError
from nkidev.legacy import tile as _tile
from nkidev.legacy.index import Box, IndexExpr, arange, is_empty, mask_box, mgrid
from nkidev.legacy.tile import (
    AssignedValue,
    Dyn,
    Indexed,
    LegacyTensor,
    Masked,
    as_legacy,
    need_tile,
    new_tile,
    par_dim,
    produced,
    result_tile,
    retarget,
    tile_of,
)

# ---------------------------------------------------------------- dtypes, buffers, constants (shared with nl)

bool_, int8, int16, int32 = cur.bool_, cur.int8, cur.int16, cur.int32
uint8, uint16, uint32 = cur.uint8, cur.uint16, cur.uint32
float16, float32, bfloat16, tfloat32 = cur.float16, cur.float32, cur.bfloat16, cur.tfloat32
float8_e4m3, float8_e5m2, float8_e4m3fn = cur.float8_e4m3, cur.float8_e5m2, cur.float8_e4m3fn
sbuf, psum, hbm, private_hbm, shared_hbm = cur.sbuf, cur.psum, cur.hbm, cur.private_hbm, cur.shared_hbm
tile_size = cur.tile_size
tensor = LegacyTensor
Tensor = LegacyTensor
ds = cur.ds
par_dim = par_dim
arange = arange
mgrid = mgrid


class _Limits:
    def __init__(self, lo: float, hi: float):
        self.min, self.max = lo, hi


fp32 = _Limits(float(np.finfo(np.float32).min), float(np.finfo(np.float32).max))
bfp16 = _Limits(float("-inf"), float(ml_dtypes.finfo(ml_dtypes.bfloat16).max))  # the docs' 0xff80 pattern reads as -inf


def finfo(dtype):
    return np.finfo(to_nki_dtype(dtype).storage)


def static_cast(x, dtype):
    """Cast a host value (NumPy array or scalar) to an NKI dtype; on a tile, a copy with a cast."""
    if isinstance(x, NkiTensor | Indexed):
        return copy(x, dtype=dtype)
    return np.asarray(x).astype(to_nki_dtype(dtype).storage)


# ---------------------------------------------------------------- type promotion (nki.api.shared.rst)

_FLOAT_RANK = {"float8_e4m3": 1, "float8_e5m2": 1, "float8_e4m3fn": 1, "float16": 2, "bfloat16": 2, "tfloat32": 3, "float32": 4}


def scalar_dtype(x) -> NkiDType:
    """A Python scalar is weakly typed as the widest hardware type of its kind; NumPy scalars keep theirs."""
    if isinstance(x, bool | np.bool_):
        return uint8
    if isinstance(x, np.generic):
        found = lookup(x.dtype)
        if found is not None:
            return found
    return int32 if isinstance(x, int | np.integer) else float32


def promote(a: NkiDType, b: NkiDType) -> NkiDType:
    if a == b:
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.is_float:
        pair = {a.name, b.name}
        if pair == {"float16", "bfloat16"}:
            return float32
        if len(pair & {"float8_e4m3", "float8_e4m3fn"}) and "float8_e5m2" in pair:
            return bfloat16
        return a if _FLOAT_RANK.get(a.name, 4) >= _FLOAT_RANK.get(b.name, 4) else b
    pair = {a.name, b.name}
    if pair == {"int8", "uint8"}:
        return int16
    if pair == {"int8", "uint16"}:
        return int32
    if pair == {"int32", "uint32"}:
        return float32
    return a if a.itemsize >= b.itemsize else b


def _dtype_of(x) -> NkiDType:
    return x.dtype if isinstance(x, NkiTensor | Indexed) else scalar_dtype(x)


# ---------------------------------------------------------------- running an instruction under a mask


def _operand(x, what: str = "operand"):
    if isinstance(x, Masked):
        x = x.resolve()
    if isinstance(x, Indexed):
        return x.resolve()
    if isinstance(x, NkiTensor):
        return need_tile(as_legacy(x), what)
    return x


def _shape_of(x) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, NkiTensor | Indexed) else ()


def masked(space: tuple[int, ...], mask, dtype, compute, buffer=MemoryRegion.sbuf, out_shape=None, out_box=None):
    """Run `compute(box)` (which issues the instructions for `box` of the iteration space and returns their
    result tile) so the legacy result is a full-shape tile written only inside the box a mask selects."""
    box = mask_box(mask, space)
    shape = tuple(out_shape if out_shape is not None else space)
    if box is None:
        out = as_legacy(compute(None))
        return produced(out)
    obox = out_box(box) if out_box is not None else box
    result = result_tile(shape, dtype, buffer)
    if is_empty(box):
        return produced(result, obox)
    temp = as_legacy(compute(box))
    temp.origin = _ctx.current().counter[0]
    target = tile_of(result, obox)
    if not retarget(target, temp, temp):
        copy_into(target, temp)
    return produced(result, obox)


def _sub(x, box: Box | None, rank: int | None = None):
    return tile_of(x, box, rank) if isinstance(x, NkiTensor | Indexed) else x


# ---------------------------------------------------------------- copies (also used by `t[...] = x`)


def _broadcast_view(src: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
    """src as a (possibly stride-0) view of `shape`; only the free dims may broadcast."""
    if tuple(src.shape) == tuple(shape):
        return src
    data = src._data
    if data.ndim < len(shape):
        data = data.reshape((1,) * (len(shape) - data.ndim) + data.shape)
    return LegacyTensor(np.broadcast_to(data, shape), src.storage, src.dtype)


def copy_into(dst: NkiTensor, src: NkiTensor) -> None:
    """dst <- src: a DMA when HBM is involved, else an engine copy; src broadcasts to dst like NumPy."""
    src = as_legacy(src)
    if src.storage.kind == "hbm" or dst.storage.kind == "hbm":
        if partitions(src) == 1 and partitions(dst) > 1 and src.size != dst.size:
            src = _partition_broadcast(src, dst.shape)
        nisa.dma_copy(dst=dst, src=src)
        return
    if src.size == dst.size and partitions(src) == partitions(dst):
        nisa.tensor_copy(dst=dst, src=src)
        return
    if partitions(src) == 1 and partitions(dst) > 1:
        src = _partition_broadcast(src, dst.shape)
        if src.size == dst.size:
            nisa.tensor_copy(dst=dst, src=src)
            return
    nisa.tensor_copy(dst=dst, src=_broadcast_view(src, tuple(dst.shape)))


def _partition_broadcast(src: NkiTensor, shape) -> LegacyTensor:
    """A (1, F...) tile copied to every partition (a DMA; engines cannot read across partitions)."""
    p = shape[0]
    full = (p,) + tuple(src.shape[1:]) if src.ndim > 1 else (p,)
    out = result_tile(full, src.dtype, sbuf)
    view = LegacyTensor(np.broadcast_to(src._data, full), src.storage, src.dtype)
    nisa.dma_copy(dst=out, src=view)
    return out


def _fill(dst: NkiTensor, value) -> None:
    """A constant into dst; a partition range engines cannot start at (t[i, j] = v on partition i) is filled
    through an aligned scratch tile and a DMA, which has no partition-start rule."""
    value = _memset_value(value, dst.dtype)
    start = partition_start(dst)
    if dst.is_on_chip and start and not aligned(start, partitions(dst)):
        staged = result_tile(dst.shape, dst.dtype, sbuf)
        nisa.memset(dst=staged, value=value)
        nisa.dma_copy(dst=dst, src=staged)
        return
    nisa.memset(dst=dst, value=value)


def _memset_value(value, dt: NkiDType):
    """Legacy memset casts the value to the tile's dtype (float values into int tiles are truncated)."""
    if dt.is_int:
        return int(value)
    return float(value)


_tile._COPY.copy = copy_into
_tile._COPY.memset = _fill

# ---------------------------------------------------------------- creation


def ndarray(shape, dtype, *, buffer=None, name: str = "", **kwargs) -> LegacyTensor:
    """A new tensor (SBUF by default); `nl.par_dim` marks the partition dim, dims in front of it are block dims."""
    return new_tile(shape, dtype, buffer, name)


def _whole(t: LegacyTensor) -> LegacyTensor:
    """The storage of t (block tensors: all blocks) as one partition-first tile."""
    st = t.storage
    return LegacyTensor(st.array, st, t.dtype) if t.par else t


def _filled(shape, value, dtype, buffer, name) -> LegacyTensor:
    region = _tile.to_region(buffer)
    if region in (MemoryRegion.private_hbm, MemoryRegion.shared_hbm):
        raise rule_error(
            "err_hbm_tensor_with_init_value_not_supported",
            f"creating HBM tensor {name or ''!r} with an initial value",
            "create it with nl.ndarray and store an SBUF tile into it",
        )
    t = new_tile(shape, dtype, buffer, name)
    _fill(_whole(t), value)
    return t


def zeros(shape, dtype, *, buffer=None, name: str = "", **kwargs) -> LegacyTensor:
    return _filled(shape, 0, dtype, buffer, name)


def ones(shape, dtype, *, buffer=None, name: str = "", **kwargs) -> LegacyTensor:
    return _filled(shape, 1, dtype, buffer, name)


def full(shape, fill_value, dtype, *, buffer=None, name: str = "", **kwargs) -> LegacyTensor:
    return _filled(shape, fill_value, dtype, buffer, name)


def zeros_like(a, dtype=None, *, buffer=None, name: str = "") -> LegacyTensor:
    return zeros(a.shape, dtype or a.dtype, buffer=buffer, name=name)


def empty_like(a, dtype=None, *, buffer=None, name: str = "") -> LegacyTensor:
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def rand(shape, dtype=np.float32, **kwargs) -> LegacyTensor:
    return as_legacy(cur.rand(tuple(shape), to_nki_dtype(dtype)))


def random_seed(seed, *, mask=None) -> None:
    cur.random_seed(_operand(seed))


def shared_constant(constant, dtype=None, **kwargs) -> LegacyTensor:
    values = np.asarray(constant)
    if dtype is not None:
        values = values.astype(to_nki_dtype(dtype).storage)
    return as_legacy(cur.shared_constant(values))


def shared_identity_matrix(n, dtype=uint8, **kwargs) -> LegacyTensor:
    return as_legacy(cur.shared_constant(np.eye(int(n)).astype(to_nki_dtype(dtype).storage)))


# ---------------------------------------------------------------- loops, SPMD, debug


def affine_range(*args, **kwargs):
    return range(*(int(a) for a in args))


def sequential_range(*args, **kwargs):
    """Iterations in order on every engine (a loop-carried dependency): the cost model fences each iteration."""
    return cur.in_order(affine_range(*args))


static_range = affine_range


def program_id(axis):
    return cur.program_id(axis)


def num_programs(axes=None):
    """The number of programs along `axes`; None (the legacy default) is all of them."""
    return cur.num_programs(axes)


def program_ndim():
    return cur.program_ndim()


class nc(int):  # noqa: N801 - the legacy spelling
    """nl.nc(n): a launch-grid dimension spread over n physical NeuronCores (LNC)."""


def spmd_dim(*dims):
    return _math.prod(int(d) for d in dims)


def device_print(prefix, x, *, mask=None) -> None:
    x = _operand(x)
    print(prefix, f32(x) if isinstance(x, NkiTensor) else x)


no_reorder = cur.no_reorder


# ---------------------------------------------------------------- data movement


def load(src, *, mask=None, dtype=None, **kwargs) -> LegacyTensor:
    """HBM -> a new SBUF tile (nisa.dma_copy); with mask=, only the selected box is loaded."""
    base = src.base if isinstance(src, Indexed) else src
    if isinstance(base, NkiTensor) and base.storage.kind != "hbm":
        raise rule_error("err_unsupported_memory", f"nl.load source {base.name!r} is in {base.storage.kind.upper()}", "load from HBM")
    shape = _shape_of(src)
    out_dt = to_nki_dtype(dtype) if dtype is not None else src.dtype

    def run(box):
        dst = result_tile(_box_shape(shape, box), out_dt)
        nisa.dma_copy(dst=dst, src=tile_of(src, box))
        return dst

    return masked(shape, mask, out_dt, run)


def _box_shape(shape, box) -> tuple[int, ...]:
    return tuple(shape) if box is None else tuple(n for _, n in box)


def store(dst, value, *, mask=None, **kwargs) -> None:
    """A tile (or a scalar) -> HBM through nisa.dma_copy; a PSUM tile is copied to SBUF first (SDK 2.26)."""
    shape = _shape_of(dst)
    box = mask_box(mask, shape)
    if is_empty(box):
        return
    target = tile_of(dst, box)
    if isinstance(value, NkiTensor | Indexed):
        src = _sub(value, box, len(shape))
        if src.storage.kind == "psum":
            staged = result_tile(src.shape, src.dtype, sbuf)
            nisa.tensor_copy(dst=staged, src=src)
            src = staged
        copy_into(target, src)
        return
    staged = result_tile(target.shape, target.dtype, sbuf)
    _fill(staged, value)
    nisa.dma_copy(dst=target, src=staged)


def load_transpose2d(src, *, mask=None, dtype=None, **kwargs) -> LegacyTensor:
    """HBM (P, F) -> a new SBUF (F, P) tile (a DMA transpose; a dtype other than the source's adds a cast)."""
    src = tile_of(src)
    out = as_legacy(cur.load_transpose2d(src))
    if dtype is not None and to_nki_dtype(dtype) != src.dtype:
        cast = result_tile(out.shape, to_nki_dtype(dtype))
        nisa.tensor_copy(dst=cast, src=out)
        out = cast
    return produced(out)


def copy(src, *, mask=None, dtype=None, **kwargs) -> LegacyTensor:
    """A new SBUF tile with src's values (cast to dtype): the usual PSUM -> SBUF eviction."""
    shape = _shape_of(src)
    out_dt = to_nki_dtype(dtype) if dtype is not None else src.dtype

    def run(box):
        s = tile_of(src, box)
        dst = result_tile(s.shape, out_dt)
        nisa.tensor_copy(dst=dst, src=need_tile(s, "src"))
        return dst

    return masked(shape, mask, out_dt, run)


copy.__nki_op__ = "copy"


def broadcast_to(src, *, shape, **kwargs) -> LegacyTensor:
    src = _operand(src)
    shape = tuple(int(s) for s in shape)
    if tuple(src.shape) == shape:
        return src
    out = result_tile(shape, src.dtype)
    copy_into(out, src)
    return produced(out)


def matmul_into(shape, dtype, **operands) -> LegacyTensor:
    """nc_matmul into a new PSUM tile that remembers how to issue the same matmul elsewhere (`psum += ...`)."""
    out = result_tile(shape, dtype, psum)
    nisa.nc_matmul(dst=out, **operands)
    out.redo = lambda dst, accumulate: nisa.nc_matmul(dst=dst, accumulate=accumulate, **operands)
    return out


def matmul(x, y, *, transpose_x=False, mask=None, **kwargs) -> LegacyTensor:
    """x @ y (x.T @ y with transpose_x=True) into a new fp32 PSUM tile."""
    x, y = _operand(x, "x"), _operand(y, "y")
    m = free_size(x) if transpose_x else partitions(x)
    n = free_size(y)
    if not transpose_x:  # the stationary operand is x.T: transpose it on the Tensor Engine first
        xt = cur.transpose(x)
        x = result_tile(xt.shape, x.dtype)
        nisa.tensor_copy(dst=x, src=xt)

    def run(box):
        xs, ys = x, y
        if box is not None:
            (m0, mn), (n0, nn) = box
            xs, ys = x[:, m0 : m0 + mn], y[:, n0 : n0 + nn]
        return matmul_into((free_size(xs), free_size(ys)), float32, stationary=xs, moving=ys)

    return masked((m, n), mask, float32, run, buffer=psum)


def transpose(x, *, dtype=None, mask=None) -> LegacyTensor:
    """The 2-d transpose of a tile (Tensor Engine through PSUM), as a new SBUF tile."""
    x = _operand(x, "x")
    t = cur.transpose(x)
    out = result_tile(t.shape, to_nki_dtype(dtype) if dtype is not None else x.dtype)
    nisa.tensor_copy(dst=out, src=t)
    return produced(out)


def expand_dims(data, axis) -> LegacyTensor:
    return _operand(data).expand_dim(int(axis))


def gather_flattened(data, indices, *, mask=None, dtype=None) -> LegacyTensor:
    return produced(as_legacy(cur.gather_flattened(_operand(data), _operand(indices), dtype=dtype)))


def where(condition, x, y, *, dtype=None, mask=None) -> LegacyTensor:
    condition, x, y = _operand(condition), _operand(x), _operand(y)
    dt = to_nki_dtype(dtype) if dtype is not None else _dtype_of(x if isinstance(x, NkiTensor) else y)
    return produced(as_legacy(cur.where(condition, x, y, dtype=dt)))


def dropout(x, rate, *, dtype=None, mask=None) -> LegacyTensor:
    return produced(as_legacy(cur.dropout(_operand(x), rate, dtype=dtype)))


def softmax(x, axis, *, dtype=None, compute_dtype=None, mask=None) -> LegacyTensor:
    return produced(as_legacy(cur.softmax(_operand(x), axis, dtype=dtype)))


def rms_norm(x, w, axis, n, epsilon=1e-06, *, dtype=None, compute_dtype=None, mask=None) -> LegacyTensor:
    x, w = _operand(x), _operand(w)
    if tuple(w.shape) != tuple(x.shape):
        w = broadcast_to(w, shape=x.shape)
    return produced(as_legacy(cur.rms_norm(x, w, axis, n, epsilon, dtype=dtype)))


# ---------------------------------------------------------------- element-wise math


def _unary(name: str, x, dtype, mask) -> LegacyTensor:
    fn = getattr(cur, name)
    shape = _shape_of(x)
    if not shape:
        raise rule_error("err_invalid_argument", f"nl.{name} needs a tile, got {type(x).__name__}", "pass a tile")
    out_dt = to_nki_dtype(dtype) if dtype is not None else x.dtype
    return masked(shape, mask, out_dt, lambda box: fn(need_tile(tile_of(x, box), "x"), dtype=out_dt))


def _make_unary(name: str):
    def fn(x, *, dtype=None, mask=None, **kwargs):
        return _unary(name, x, dtype, mask)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Element-wise {name} of a tile (legacy signature: dtype=, mask=)."
    fn.__nki_op__ = getattr(cur, name).__nki_op__
    fn.__module__ = "neuronxcc.nki.language"
    return fn


exp = _make_unary("exp")
log = _make_unary("log")
sqrt = _make_unary("sqrt")
rsqrt = _make_unary("rsqrt")
tanh = _make_unary("tanh")
sigmoid = _make_unary("sigmoid")
relu = _make_unary("relu")
gelu = _make_unary("gelu")
gelu_apprx_tanh = _make_unary("gelu_apprx_tanh")
gelu_apprx_sigmoid = _make_unary("gelu_apprx_sigmoid")
gelu_dx = _make_unary("gelu_dx")
gelu_apprx_sigmoid_dx = _make_unary("gelu_apprx_sigmoid_dx")
silu = _make_unary("silu")
silu_dx = _make_unary("silu_dx")
softplus = _make_unary("softplus")
mish = _make_unary("mish")
erf = _make_unary("erf")
erf_dx = _make_unary("erf_dx")
reciprocal = _make_unary("reciprocal")
square = _make_unary("square")
abs = _make_unary("abs")
sign = _make_unary("sign")
arctan = _make_unary("arctan")
sin = _make_unary("sin")
cos = _make_unary("cos")
tan = _make_unary("tan")
negative = _make_unary("negative")
invert = _make_unary("invert")
logical_not = _make_unary("logical_not")
floor = _make_unary("floor")
ceil = _make_unary("ceil")
trunc = _make_unary("trunc")

_COMPARE = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"}


def _binary(name: str, x, y, dtype, mask) -> LegacyTensor:
    fn = getattr(cur, name)
    tx, ty = isinstance(x, NkiTensor | Indexed), isinstance(y, NkiTensor | Indexed)
    if not (tx or ty):
        raise rule_error("err_invalid_argument", f"nl.{name} needs at least one tile", "pass a tile")
    if dtype is not None:
        out_dt = to_nki_dtype(dtype)
    elif name in _COMPARE:
        out_dt = bool_
    else:
        out_dt = promote(_dtype_of(x), _dtype_of(y))
    try:
        space = tuple(np.broadcast_shapes(_shape_of(x), _shape_of(y)))
    except ValueError:
        raise rule_error(
            "err_shape_mismatch", f"nl.{name} of shapes {_shape_of(x)} and {_shape_of(y)}", "use shapes that broadcast like NumPy"
        ) from None

    def run(box):
        a, b = _sub(x, box, len(space)), _sub(y, box, len(space))
        shape = _box_shape(space, box)
        out = result_tile(shape, out_dt)
        if isinstance(a, NkiTensor) and isinstance(b, NkiTensor):
            a, b = _legal_pair(need_tile(a, "x"), need_tile(b, "y"), shape)
            engine = nisa.engine.gpsimd if name == "power" else nisa.engine.unknown
            nisa.tensor_tensor(dst=out, data1=a, data2=b, op=fn, engine=engine)
            return out
        t, s, reverse = (a, b, False) if isinstance(a, NkiTensor) else (b, a, True)
        t = need_tile(t, "x")
        if tuple(t.shape) != shape:
            t = _broadcast_to_shape(t, shape)
        if name == "power":
            exponent = result_tile(shape, float32)
            _fill(exponent, s)
            x1, x2 = (exponent, t) if reverse else (t, exponent)
            nisa.tensor_tensor(dst=out, data1=x1, data2=x2, op=fn, engine=nisa.engine.gpsimd)
            return out
        nisa.tensor_scalar(dst=out, data=t, op0=fn, operand0=_scalar_value(s, t.dtype, name), reverse0=reverse)
        return out

    return masked(space, mask, out_dt, run)


_BITVEC = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}


def _scalar_value(s, dt: NkiDType, name: str):
    if name in _BITVEC:
        return int(s)
    return float(s)


def _broadcast_to_shape(t: NkiTensor, shape) -> NkiTensor:
    if partitions(t) == 1 and shape[0] > 1:
        t = _partition_broadcast(t, shape)
    return _broadcast_view(t, tuple(shape)) if tuple(t.shape) != tuple(shape) else t


def _legal_pair(a: NkiTensor, b: NkiTensor, shape) -> tuple[NkiTensor, NkiTensor]:
    """Both operands at the result's shape (NumPy broadcasting; across partitions via a copy), not both in PSUM."""
    a, b = _broadcast_to_shape(a, shape), _broadcast_to_shape(b, shape)
    if a.storage.kind == "psum" and b.storage.kind == "psum":
        staged = result_tile(b.shape, b.dtype, sbuf)
        nisa.tensor_copy(dst=staged, src=b)
        b = staged
    return a, b


def _make_binary(name: str):
    def fn(x, y, *args, dtype=None, mask=None, **kwargs):
        if args:  # fmod / mod take dtype positionally
            dtype = args[0]
        return _binary(name, x, y, dtype, mask)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Element-wise {name}; tiles broadcast NumPy-style (legacy signature: dtype=, mask=)."
    fn.__nki_op__ = getattr(cur, name).__nki_op__
    fn.__module__ = "neuronxcc.nki.language"
    return fn


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
divide = _make_binary("divide")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
power = _make_binary("power")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
bitwise_and = _make_binary("bitwise_and")
bitwise_or = _make_binary("bitwise_or")
bitwise_xor = _make_binary("bitwise_xor")
left_shift = _make_binary("left_shift")
right_shift = _make_binary("right_shift")
logical_and = _make_binary("logical_and")
logical_or = _make_binary("logical_or")
logical_xor = _make_binary("logical_xor")
fmod = _make_binary("fmod")
mod = _make_binary("mod")

# ---------------------------------------------------------------- reductions (any free axes; reduced axes dropped)


def _axes(ndim: int, axis) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axes))


def _reduce_shape(shape, axes, keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    kept = tuple(n for i, n in enumerate(shape) if i not in axes)
    return kept if len(kept) > 1 else (kept or (1,)) + (1,)


def _reduce_into(op, x: NkiTensor, axes, out_dt, keepdims: bool, negate: bool = False) -> LegacyTensor:
    x = need_tile(x, "x")
    kept = [i for i in range(x.ndim) if i not in axes]
    if 0 in axes:
        raise rule_error("err_reduce_axis_invalid", "a reduction over the partition dim (axis 0)", "reduce free axes only")
    order = kept + list(axes)
    data = x.permute(tuple(order)) if order != list(range(x.ndim)) else x
    out = result_tile(_reduce_shape(x.shape, axes, keepdims), out_dt)
    trailing = tuple(range(len(kept), x.ndim))
    nisa.tensor_reduce(dst=out, op=op, data=data, axis=trailing, negate=negate, keepdims=False)
    return out


def _reduction(op_name: str, x, axis, dtype, mask, keepdims, negate=False):
    return reduction(getattr(cur, op_name), x, axis, dtype, mask, keepdims, negate)


def reduction(op, x, axis, dtype, mask, keepdims, negate=False):
    x = x if isinstance(x, Indexed) else _operand(x, "x")
    shape = _shape_of(x)
    axes = _axes(len(shape), axis)
    out_dt = to_nki_dtype(dtype) if dtype is not None else x.dtype
    out_shape = _reduce_shape(shape, axes, keepdims)

    def out_box(box):
        kept = tuple(b for i, b in enumerate(box) if i not in axes)
        if keepdims:
            return tuple((0, 1) if i in axes else b for i, b in enumerate(box))
        return kept if len(kept) > 1 else kept + ((0, 1),)

    return masked(
        shape, mask, out_dt, lambda box: _reduce_into(op, tile_of(x, box), axes, out_dt, keepdims, negate), None, out_shape, out_box
    )


def _spec(name: str):
    """Legacy reductions double as op specifiers (select_reduce(reduce_op=nl.max), ...)."""

    def mark(fn):
        fn.__nki_op__ = name
        return fn

    return mark


@_spec("add")
def sum(x, axis, *, dtype=None, mask=None, keepdims=False):  # noqa: A001 - NKI's name
    return _reduction("add", x, axis, dtype, mask, keepdims)


@_spec("maximum")
def max(x, axis, *, dtype=None, mask=None, keepdims=False):  # noqa: A001
    return _reduction("maximum", x, axis, dtype, mask, keepdims)


@_spec("minimum")
def min(x, axis, *, dtype=None, mask=None, keepdims=False):  # noqa: A001
    return _reduction("minimum", x, axis, dtype, mask, keepdims)


@_spec("multiply")
def prod(x, axis, *, dtype=None, mask=None, keepdims=False):
    return _reduction("multiply", x, axis, dtype, mask, keepdims)


def all(x, axis, *, dtype=None, mask=None):  # noqa: A001
    return _reduction("logical_and", x, axis, dtype or bool_, mask, False)


def mean(x, axis, *, dtype=None, mask=None, keepdims=False):
    x = _operand(x, "x")
    out_dt = to_nki_dtype(dtype) if dtype is not None else x.dtype
    total = _reduction("add", x, axis, float32, mask, keepdims)
    n = _math.prod(x.shape[a] for a in _axes(x.ndim, axis))
    out = result_tile(total.shape, out_dt)
    nisa.tensor_scalar(dst=out, data=total, op0=cur.multiply, operand0=1.0 / n)
    return produced(out)


def var(x, axis, *, dtype=None, mask=None):
    x = _operand(x, "x")
    return produced(as_legacy(cur.var(x, axis, dtype=dtype)))


# ---------------------------------------------------------------- not emulated


def _missing(name: str):
    def fn(*args, **kwargs):
        raise NkiNotSupportedError(
            "err_not_supported_yet", f"neuronxcc.nki.language.{name} is not emulated by nkidev yet", None, kernel_location()
        )

    fn.__name__ = name
    return fn


def atomic_rmw(dst, value, op, *, mask=None) -> None:
    """dst = op(dst, value) in HBM through the DMA engines (only nl.add / np.add); dst may use a tile of indices."""
    if getattr(op, "__nki_op__", getattr(op, "__name__", None)) != "add":
        raise rule_error("err_invalid_op", f"atomic_rmw op={op!r}", "atomic_rmw supports op=np.add only")
    shape = _shape_of(dst)
    box = mask_box(mask, shape)
    if is_empty(box):
        return
    target, src = tile_of(dst, box), _sub(value, box, len(shape))
    nisa.dma_compute(dst=target, srcs=[src, target], reduce_op=cur.add)


# NumPy reductions legacy kernels pass as ops (op=np.max is not a ufunc, so it has no __nki_op__ of its own): the
# element-wise op each stands for (nl.loop_reduce here, the nisa wrappers in legacy/isa.py)
_NUMPY_OPS = {np.max: cur.maximum, np.amax: cur.maximum, np.min: cur.minimum, np.amin: cur.minimum, np.sum: cur.add, np.copy: cur.copy}


class _LoopReduce(AssignedValue):
    """`dst[...] = nl.loop_reduce(x, op, loop_indices)`: dst = op(dst, x) (the legacy docs: "the destination tile is
    also the rhs input to op", `b = nisa.tensor_tensor(b, x, op)`). A destination never written yet (an nl.ndarray,
    as machine-generated NKIBench kernels reduce into) starts the reduction with x: `loop_indices` names the loops
    the reduction runs over, and it begins at their first iteration."""

    def __init__(self, x, op, dtype, mask):
        self.x, self.op, self.dtype, self.mask = x, op, dtype, mask

    def value_for(self, dst) -> NkiTensor:
        target = _operand(dst, "dst")
        # a destination no instruction wrote yet (it still holds this run's fresh-allocation fill) starts with x
        if is_uninitialized(raw(target), target.dtype, _ctx.current().options.fill):
            return copy(self.x, dtype=self.dtype, mask=self.mask)
        return _binary(_op_name(_NUMPY_OPS.get(self.op, self.op)), target, self.x, self.dtype, self.mask)


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kwargs):
    """Reduce x over the iterations of the loops `loop_indices` into the destination: the tensor the result is
    assigned to, or, for `b = nl.loop_reduce(x, ...)` (the docs' form), the tile b holds before the assignment."""
    reduction = _LoopReduce(_operand(x, "x"), op, dtype, mask)
    frame = sys._getframe(1)
    while frame is not None and is_internal(frame.f_code.co_filename):  # past the module's wrappers
        frame = frame.f_back
    rebound = _rebound_local(frame) if frame is not None else None
    return reduction.value_for(rebound) if rebound is not None else reduction


def _rebound_local(frame):
    """The tile a local name holds when the caller's next instruction stores the call's result into that name
    (`b = nl.loop_reduce(...)`); None for any other use (a subscript assignment goes through AssignedValue)."""
    key = (frame.f_code, frame.f_lasti)
    name = _STORED_NAME.get(key, ...)
    if name is ...:
        # f_lasti is the call's last code unit (its inline caches included): the next instruction is the one after it
        nxt = next((ins for ins in dis.get_instructions(frame.f_code) if ins.offset > frame.f_lasti), None)
        stores = nxt is not None and nxt.opname in ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")
        name = _STORED_NAME[key] = nxt.argval if stores else None
    if name is None:
        return None
    value = frame.f_locals.get(name, frame.f_globals.get(name))
    return value if isinstance(value, NkiTensor) else None


_STORED_NAME: dict = {}  # (code, call offset) -> the name its result is stored to, or None


all_reduce = _missing("all_reduce")
gemm_grid = _missing("gemm_grid")
gemm_stationary_grid = _missing("gemm_stationary_grid")

# ---------------------------------------------------------------- LegacyTensor operators and in-place updates


def _op(fn, reverse: bool = False):
    dynamic = fn.__name__ in ("add", "subtract")

    def method(self, other):
        if dynamic and isinstance(other, IndexExpr):  # offsets[0, i] + iy: a run-time index
            if fn.__name__ == "add":
                return Dyn(self, other)
            return Dyn(self, -other) if not reverse else NotImplemented
        return fn(other, self) if reverse else fn(self, other)

    return method


def _inplace(fn_name: str):
    op = getattr(cur, fn_name)

    def method(self, other):
        spare = sys.getrefcount(other) <= _tile.IADD_REFS
        return _accumulate(self, other, op, spare)

    return method


def _accumulate(self, other, op, spare: bool):
    """`t += x`: in place. Into PSUM, a fresh matmul result accumulates in the matmul itself (the legacy
    idiom for PSUM accumulation); otherwise one tensor_tensor (or tensor_scalar) writes t."""
    dst = self.resolve() if isinstance(self, Indexed) else self
    if isinstance(other, Indexed):
        other, spare = other.resolve(), False
    if spare and op is cur.add and isinstance(other, LegacyTensor) and dst.storage.kind == "psum" == other.storage.kind:
        # a masked matmul wrote only its box of `other`: the elements of dst outside it keep their values
        box = other.valid if tuple(dst.shape) == tuple(other.shape) else None
        if box is not None and is_empty(box):
            return self
        if retarget(tile_of(dst, box), other, tile_of(other, box), accumulate=True):
            return self
    if isinstance(other, NkiTensor):
        a, b = _legal_pair(dst, need_tile(as_legacy(other), "operand"), tuple(dst.shape))
        nisa.tensor_tensor(dst=dst, data1=a, data2=b, op=op)
    else:
        nisa.tensor_scalar(dst=dst, data=dst, op0=op, operand0=float(other))
    return self


def install_operators() -> None:
    pairs = {
        "add": add,
        "sub": subtract,
        "mul": multiply,
        "truediv": divide,
        "pow": power,
        "and": bitwise_and,
        "or": bitwise_or,
        "xor": bitwise_xor,
        "lshift": left_shift,
        "rshift": right_shift,
        "mod": mod,
    }
    for cls in (LegacyTensor, Indexed):
        for name, fn in pairs.items():
            setattr(cls, f"__{name}__", _op(fn))
            setattr(cls, f"__r{name}__", _op(fn, True))
        for name, fn in {"lt": less, "le": less_equal, "gt": greater, "ge": greater_equal}.items():
            setattr(cls, f"__{name}__", _op(fn))
        cls.broadcast_to = lambda self, shape: broadcast_to(self, shape=shape)
        cls.astype = lambda self, dtype: copy(self, dtype=dtype)
        cls.__matmul__ = _op(matmul)
        cls.__neg__ = lambda self: negative(self)
        cls.__invert__ = lambda self: invert(self)
        cls.__abs__ = lambda self: abs(self)
        for name, op_name in {"iadd": "add", "isub": "subtract", "imul": "multiply", "itruediv": "divide"}.items():
            setattr(cls, f"__{name}__", _inplace(op_name))


install_operators()

__all__ = [n for n in list(globals()) if not n.startswith("_") and n not in ("annotations", "contextlib", "sys", "np", "ml_dtypes")]
