"""`nki.language` as the emulator provides it: dtypes, buffers, tile sizes, tensor creation, loops,
SPMD queries, and the element-wise/reduction helpers built from `nki.isa` instructions (so every
`nl` call shows up in the trace as the instructions the hardware would run).

Each math function is also an *op specifier*: `nisa.tensor_tensor(..., op=nl.add)`.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools as _functools
import inspect as _inspect
import math as _math
import types as _types
from collections.abc import Sequence

import numpy as np

from nkidev.emulator import context as _ctx
from nkidev.emulator import gate, versions
from nkidev.emulator import generated as _generated
from nkidev.emulator import isa as nisa
from nkidev.emulator.alu import OpSpec
from nkidev.emulator.dtypes import DTYPES, NkiDType, to_nki_dtype
from nkidev.emulator.grids import (  # noqa: F401  (NKI 0.7 names of nki.language)
    NkiBlockGrid,
    NkiGrid,
    NkiTileGrid,
    alloc_blocks,
    alloc_tiles,
    blocks,
    empty_like_grid,
    tiles,
)
from nkidev.emulator.location import kernel_location, rule_error
from nkidev.emulator.memory import f32
from nkidev.emulator.placement import ON_CHIP as _ON_CHIP
from nkidev.emulator.placement import placed as _placed
from nkidev.emulator.registers import NkiScalar, VirtualRegister
from nkidev.emulator.rules import NUMBER
from nkidev.emulator.tensor import DynSlice, MemoryRegion, NkiTensor, allocate, free_size, from_array, partitions
from nkidev.errors import NkiNotSupportedError

# ---------------------------------------------------------------- dtypes and buffers
bool_ = DTYPES["bool_"]
int8, int16, int32 = DTYPES["int8"], DTYPES["int16"], DTYPES["int32"]
# NKI 0.7's 64-bit dtypes are served by __getattr__, which checks the running version: a dtype is a value, so looking
# it up is the only use of the name there is to gate (0.6 kernels see no such attribute, as in NKI 0.6)
_VERSIONED_DTYPES = {"int64": DTYPES["int64"], "uint64": DTYPES["uint64"]}
uint8, uint16, uint32 = DTYPES["uint8"], DTYPES["uint16"], DTYPES["uint32"]
float16, float32, bfloat16, tfloat32 = DTYPES["float16"], DTYPES["float32"], DTYPES["bfloat16"], DTYPES["tfloat32"]
float8_e4m3, float8_e4m3fn, float8_e5m2 = DTYPES["float8_e4m3"], DTYPES["float8_e4m3fn"], DTYPES["float8_e5m2"]
float8_e8m0fnu = DTYPES["float8_e8m0fnu"]
float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4 = (DTYPES["float8_e5m2_x4"], DTYPES["float8_e4m3fn_x4"], DTYPES["float4_e2m1fn_x4"])
dtype = NkiDType
DType = NkiDType

sbuf = MemoryRegion.sbuf
psum = MemoryRegion.psum
hbm = MemoryRegion.hbm
private_hbm = MemoryRegion.private_hbm
shared_hbm = MemoryRegion.shared_hbm

tensor = NkiTensor


class NKIObject:
    """Base class for NKI kernel dataclasses and configuration objects."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __init_subclass__(cls, **kwargs):
        # `@dataclass class P(nl.NKIObject): idx = None` is constructed as P(idx=3) by nki-library; a plain
        # dataclass makes no field of an un-annotated name, so annotate those before the decorator runs.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        extra = {n: object for n, v in cls.__dict__.items() if n not in own and _plain_field(n, v)}
        if extra:
            cls.__annotations__ = {**own, **extra}
        # The NKI compiler's default initializer gives a field declared without a default the default None
        # (NKI language guide, "Class Support": `x: int` -> `def __init__(self, x=None, ...)`), so a kernel may
        # leave one out; Python's dataclass would refuse the call, so give those fields None before it runs.
        for name, annotation in own.items():
            if not hasattr(cls, name) and not name.startswith("__") and not _is_pseudo_field(annotation):
                setattr(cls, name, None)


def _is_pseudo_field(annotation) -> bool:
    """ClassVar / InitVar annotations are not instance fields (a default there would change their meaning)."""
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return "ClassVar" in text or "InitVar" in text


def _plain_field(name: str, value) -> bool:
    if name.startswith("_") or isinstance(value, type | classmethod | staticmethod | property | dataclasses.Field):
        return False
    if isinstance(value, list | dict | set):  # a dataclass refuses mutable defaults; leave them class attributes
        return False
    return not callable(value)


class _Limits:
    def __init__(self, np_dtype):
        info = np.finfo(np_dtype)
        self.min, self.max = float(info.min), float(info.max)


fp32 = _Limits(np.float32)  # legacy helpers: nl.fp32.min is the FP32_MIN fill value


class _TileSize(NKIObject):
    """Hardware tile size constants of the current target."""

    @property
    def _t(self):
        return _ctx.current().target

    pmax = property(lambda self: self._t.sbuf.partitions)
    psum_fmax = property(lambda self: self._t.psum_bank_fmax)
    psum_bank_fmax = property(lambda self: self._t.psum_bank_fmax)
    psum_bank_fmax_bytes = property(lambda self: self._t.psum.bank_bytes)
    psum_num_banks = property(lambda self: self._t.psum.banks)
    gemm_stationary_fmax = property(lambda self: self._t.tensor_engine.stationary_fmax)
    gemm_moving_fmax = property(lambda self: self._t.psum_bank_fmax)
    bn_stats_fmax = property(lambda self: 512)  # [sources: isa-api "bn_stats"]: free size <= 512 on every generation
    psum_min_align = property(lambda self: 4)
    sbuf_min_align = property(lambda self: 1)
    sbuf_size_bytes = property(lambda self: self._t.sbuf.partitions * self._t.sbuf.bytes_per_partition)
    sbuf_fmax_bytes = property(lambda self: self._t.sbuf.usable_bytes_per_partition)
    sbuf_fmax = property(lambda self: self._t.sbuf.usable_bytes_per_partition // 4)
    total_available_sbuf_size = property(lambda self: self._t.sbuf.usable_bytes_per_partition)


tile_size = _TileSize()


def is_hbm(buffer) -> bool:
    return buffer in (MemoryRegion.private_hbm, MemoryRegion.shared_hbm)


def is_sbuf(buffer) -> bool:
    return buffer == MemoryRegion.sbuf


def is_psum(buffer) -> bool:
    return buffer == MemoryRegion.psum


def is_on_chip(buffer) -> bool:
    return buffer in (MemoryRegion.sbuf, MemoryRegion.psum)


prelu = OpSpec("prelu")
bypass = OpSpec("bypass")
average = OpSpec("average")


def _spec(name: str):
    def mark(fn):
        fn.__nki_op__ = name
        return fn

    return mark


# ---------------------------------------------------------------- creation


def ndarray(shape, dtype, buffer=sbuf, name: str = "", address=None) -> NkiTensor:
    """A new uninitialized tensor (reads as NaN / 4 until written, like the official simulator)."""
    if address is not None and buffer in _ON_CHIP:
        return _placed(shape, dtype, buffer, name, address)
    return allocate(shape, dtype, buffer, name, skip=2)  # skip: this function and the argument guard calling it


def _filled(shape, value, dtype, buffer, name) -> NkiTensor:
    t = allocate(shape, dtype, buffer, name)
    if t.storage.kind == "hbm":
        t.storage.overwrite_all()
        t._data[...] = value  # no engine can memset HBM; the compiler materializes such constants
        t.storage.written = True
    else:
        nisa.memset(dst=t, value=value)
    return t


def zeros(shape, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    return _filled(shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    return _filled(shape, 1, dtype, buffer, name)


def full(shape, fill_value, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    return _filled(shape, fill_value, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, name: str = "") -> NkiTensor:
    return zeros(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def empty_like(x, dtype=None, buffer=None, name: str = "", *, transpose_axes=None, address=None):
    """An uninitialized tensor (or grid, NKI 0.7) shaped like x; `transpose_axes` (NKI 0.7) prepares the SBUF
    destination of a later nisa.dma_transpose of x (no instruction is emitted)."""
    if address is not None:
        gate.require("nki.language.empty_like(address=)")
    if isinstance(x, NkiGrid):
        return empty_like_grid(x, dtype, buffer, name, address)
    if transpose_axes is None:
        return ndarray(x.shape, dtype or x.dtype, buffer or x.buffer, name, address)
    gate.require("nki.language.empty_like(transpose_axes=)")
    ints = isinstance(transpose_axes, tuple | list) and builtins.all(isinstance(a, int | np.integer) for a in transpose_axes)
    axes = tuple(int(a) for a in transpose_axes) if ints else None  # anything else: the named error below
    if axes not in ((1, 0), (2, 1, 0), (3, 1, 2, 0)) or len(axes) != x.ndim:
        raise rule_error(
            "err_invalid_argument",
            f"transpose_axes={transpose_axes} for a {x.ndim}-d tensor",
            "use (1, 0), (2, 1, 0) or (3, 1, 2, 0) (ranks 2 to 4)",
        )
    shape = tuple(x.shape[a] for a in axes)
    if shape[0] > _ctx.current().target.sbuf.partitions:
        raise rule_error(
            "err_num_partition_exceed_arch_limit",
            f"transposing {x.shape} by {axes} makes {shape[0]} destination partitions",
            "tile the source so the dim that becomes the partition dim is at most 128",
        )
    return ndarray(shape, dtype or x.dtype, buffer or sbuf, name, address)


def rand(shape, dtype=float32, buffer=sbuf, name: str = "") -> NkiTensor:
    t = allocate(shape, dtype, buffer, name)
    if _ctx.current().target.has_instruction("rand2"):
        nisa.rand2(dst=t, min=0.0, max=1.0)
    else:
        bits = allocate(shape, uint16, sbuf)
        nisa.rng(dst=bits)
        nisa.tensor_scalar(dst=t, data=bits, op0=multiply, operand0=1.0 / 65536.0)
    return t


def random_seed(seed) -> None:
    nisa.set_rng_seed(src_seeds=seed)


def shared_constant(constant) -> NkiTensor:
    if isinstance(constant, str):
        constant = np.load(constant)
    return from_array(np.asarray(constant), "shared_constant", MemoryRegion.shared_hbm, role="internal")


def shared_identity_matrix(n, dtype=uint8, dst=None) -> NkiTensor:
    out = dst if dst is not None else allocate((n, n), dtype, sbuf)
    ones_tile = allocate((n, n), dtype, sbuf)
    nisa.memset(dst=ones_tile, value=1)
    nisa.affine_select(dst=out, pattern=[[-1, n]], channel_multiplier=1, on_true_tile=ones_tile, on_false_value=0.0, cmp_op=equal)
    return out


def ds(start, size) -> DynSlice:
    return DynSlice(start, size)


def par_dim(n):
    """Legacy partition-dim marker; shapes are plain tuples in the current API."""
    return n


def static_cast(x, dtype):
    """Legacy helper used by test harnesses: cast a NumPy array to an NKI dtype."""
    return np.asarray(x).astype(to_nki_dtype(dtype).storage)


def arange(*args):
    raise NkiNotSupportedError(
        "err_not_supported_yet",
        "nl.arange advanced indexing was removed in NKI Beta 2",
        "index with slices or nl.ds(start, size)",
        kernel_location(),
    )


class _MGrid:
    def __getitem__(self, key):
        raise NkiNotSupportedError(
            "err_not_supported_yet", "nl.mgrid was removed in NKI Beta 2", "index with slices or nl.ds(start, size)", kernel_location()
        )


mgrid = _MGrid()


# ---------------------------------------------------------------- loops, SPMD, misc


def affine_range(start, stop=None, step=1):
    """Alias of range (NKI 0.3.0+ unrolls every static loop)."""
    return range(int(start)) if stop is None else range(int(start), int(stop), int(step))


static_range = affine_range


def sequential_range(start, stop=None, step=1):
    """A loop with a loop-carried dependency: the compiler keeps its iterations in order on every engine (the cost
    model fences each iteration). Under NKI 0.7 it is deprecated and is Python range, so it reorders like any loop."""
    iterations = affine_range(start, stop, step)
    deprecated = versions.API["nki.language.sequential_range"].deprecated
    return iterations if versions.at_least(gate.current_version(), deprecated) else in_order(iterations)


class in_order(Sequence):  # noqa: N801 - used like the range it wraps
    """A range whose iterations are fenced in the trace: no instruction of one iteration is scheduled before one
    of an earlier iteration on the same engine (sequential loops, device loops). Still a sequence, like range."""

    def __init__(self, iterations: range):
        self.iterations = iterations

    def __len__(self) -> int:
        return len(self.iterations)

    def __getitem__(self, k):
        return self.iterations[k]

    def __iter__(self):
        return _fenced(self.iterations)

    def __reversed__(self):
        return _fenced(reversed(self.iterations))

    def __repr__(self) -> str:
        return repr(self.iterations)


def _fenced(iterations):
    trace = _ctx.current().trace
    if trace is None:
        yield from iterations
        return
    for i in iterations:
        trace.fence()
        yield i
    trace.fence()


def _reg(x) -> int:
    return x.value if isinstance(x, VirtualRegister) else int(x)


def _bound(x, what: str) -> int:
    """A device-loop bound: an int, a VirtualRegister or an int32 NkiScalar (int64 has no 64-bit trip-count compare)."""
    if isinstance(x, NkiScalar):
        if x.bits == 64:
            raise rule_error(
                "err_nki_scalar_operation",
                f"an int64 NkiScalar is the {what} of nl.fori_loop; loop bounds are 32-bit",
                "load the bound from an nl.int32 tile (64-bit scalars may be computed inside the body)",
            )
        return x.usable(f"the {what} of nl.fori_loop")
    return _reg(x)


def dynamic_range(start, stop=None, step=1):
    """A device loop with run-time bounds; the emulator knows the registers' values, so it simply iterates."""
    return in_order(affine_range(_reg(start), None if stop is None else _reg(stop), step))


def fori_loop(lower, upper, body_fun, step=1, **newer) -> None:
    """A device loop running body_fun(i) for i in range(lower, upper, step); bounds are ints, VirtualRegisters or
    (NKI 0.7) int32 NkiScalars. Under NKI 0.7 `i` is an NkiScalar unless a bound is a VirtualRegister.
    (v2.33.0/nki/api/generated/nki.language.fori_loop.html; `unroll=` is NKI 0.8, see versions.API.)"""
    if newer:
        _newer_keywords("fori_loop", newer)
    if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
        raise rule_error("err_invalid_argument", f"fori_loop step={step!r}", "the step is a compile-time positive int")
    registers = isinstance(lower, VirtualRegister) or isinstance(upper, VirtualRegister)
    as_scalar = not registers and gate.has("nki.isa.NkiScalar")
    for i in in_order(range(_bound(lower, "lower bound"), _bound(upper, "upper bound"), step)):
        body_fun(NkiScalar(i, int32) if as_scalar else VirtualRegister(i))


# help() and inspect show the documented 0.7 signature; **newer only catches the keywords later versions add
fori_loop.__signature__ = _inspect.signature(fori_loop).replace(
    parameters=[p for p in _inspect.signature(fori_loop).parameters.values() if p.kind is not p.VAR_KEYWORD]
)


def _newer_keywords(fn_name: str, given: dict) -> None:
    """Keywords a later NKI adds to nl.<fn_name>: the named version error for the first one versions.API lists, else
    the TypeError Python gives an unknown keyword."""
    for key in given:
        if f"nki.language.{fn_name}({key}=)" in versions.API:
            gate.require(f"nki.language.{fn_name}({key}=)")
    raise TypeError(f"{fn_name}() got an unexpected keyword argument {next(iter(given))!r}")


def while_loop(init, body_fun, max_iterations: int = 1_000_000) -> None:
    r = init
    for _ in in_order(builtins.range(max_iterations)):
        if not _reg(r):
            return
        r = body_fun(VirtualRegister(_reg(r)))
    raise rule_error(
        "err_invalid_argument", f"while_loop ran {max_iterations} iterations", "make sure body_fun eventually returns a zero register"
    )


def program_id(axis=0) -> int:
    ctx = _ctx.current()
    axis = int(axis)
    return ctx.program_id[axis] if axis < len(ctx.program_id) else 0


def num_programs(axes=None) -> int:
    grid = _ctx.current().grid
    if axes is None:
        return _math.prod(grid)
    if isinstance(axes, int):
        return grid[axes] if axes < len(grid) else 1
    return _math.prod(grid[a] for a in axes)


def program_ndim() -> int:
    grid = _ctx.current().grid
    return 0 if grid == (1,) and not _ctx.current().in_kernel else len(grid)


@contextlib.contextmanager
def no_reorder():
    """Instructions of the block keep their source order (the cost model fences every one of them)."""
    trace = _ctx.current().trace
    start = len(trace) if trace is not None else 0
    try:
        yield
    finally:
        if trace is not None:
            trace.fence_each_since(start)


def device_print(print_prefix, tensor) -> None:
    print(print_prefix, f32(tensor) if isinstance(tensor, NkiTensor) else tensor)


# ---------------------------------------------------------------- data movement helpers


def load(src: NkiTensor, dtype=None) -> NkiTensor:
    """HBM -> new SBUF tile (a dma_copy)."""
    out = allocate(src.shape, dtype or src.dtype, sbuf)
    nisa.dma_copy(dst=out, src=src)
    return out


def store(dst: NkiTensor, value: NkiTensor) -> None:
    """SBUF tile -> HBM (a dma_copy; PSUM sources are rejected like on hardware)."""
    nisa.dma_copy(dst=dst, src=value)


def load_transpose2d(src: NkiTensor, dtype=None) -> NkiTensor:
    if src.ndim != 2:
        raise rule_error("err_invalid_argument", f"nl.load_transpose2d: src {src.shape} is not 2-d", "pass a 2-d HBM tensor")
    out = allocate((src.shape[1], src.shape[0]), dtype or src.dtype, sbuf)
    nisa.dma_transpose(dst=out, src=src)
    return out


@_spec("copy")
def copy(x, dtype=None) -> NkiTensor:
    out = allocate(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_copy(dst=out, src=x)
    return out


def transpose(x, dtype=None) -> NkiTensor:
    """2-d transpose on the Tensor Engine; the result is a PSUM tile."""
    p, f = partitions(x), free_size(x)
    out = allocate((f, p), dtype or x.dtype, psum)
    nisa.nc_transpose(dst=out, data=x, engine=nisa.engine.tensor)
    return out


def matmul(x, y, transpose_x=False) -> NkiTensor:
    """x @ y (or x.T @ y with transpose_x=True) into a new fp32 PSUM tile."""
    if not transpose_x:
        xt_psum = transpose(x)
        x = allocate(xt_psum.shape, x.dtype, sbuf)
        nisa.tensor_copy(dst=x, src=xt_psum)
    out = allocate((free_size(x), free_size(y)), float32, psum)
    nisa.nc_matmul(dst=out, stationary=x, moving=y)
    return out


def expand_dims(x, axis) -> NkiTensor:
    return x.expand_dim(int(axis))


def broadcast_to(x, shape, dtype=None) -> NkiTensor:
    if not isinstance(shape, tuple | list) or not builtins.all(isinstance(s, int | np.integer) and not isinstance(s, bool) for s in shape):
        raise rule_error(
            "err_invalid_argument", f"nl.broadcast_to: shape={shape!r} is not a tuple of ints", "pass a shape such as (128, 512)"
        )
    shape = tuple(int(s) for s in shape)
    if len(shape) != x.ndim or any(have not in (1, want) for have, want in zip(x.shape, shape)):
        raise rule_error(
            "err_invalid_argument",
            f"nl.broadcast_to: cannot broadcast {tuple(x.shape)} to {shape}",
            "keep the rank and stretch only dims of size 1",
        )
    if tuple(x.shape) == shape and dtype is None:
        return x
    view = x
    for dim, (have, want) in enumerate(zip(x.shape, shape)):
        if have != want:
            view = (
                NkiTensor(np.broadcast_to(view._data, view.shape[:dim] + (want,) + view.shape[dim + 1 :]), view.storage, view.dtype)
                if dim == 0
                else view.broadcast(dim, want)
            )
    out = allocate(shape, dtype or x.dtype, sbuf)
    if shape[0] == x.shape[0]:
        nisa.tensor_copy(dst=out, src=view)
    elif _broadcasts_on_tensor_engine(x, shape):
        _partition_broadcast_matmul(x, out)
    else:
        nisa.dma_copy(dst=out, src=view)  # a cross-partition move the Tensor Engine cannot make (HBM, PSUM, integers)
    return out


BROADCAST_COLUMNS = 512  # nc_matmul's moving free size on every target (one fp32 PSUM bank on NC-v2/v3)


def _broadcasts_on_tensor_engine(x, shape) -> bool:
    """A one-partition 2D SBUF tile of a Tensor Engine dtype, stretched over partitions only: broadcast_to runs it as a
    matmul against ones."""
    return (
        x.ndim == 2
        and x.shape[0] == 1
        and x.shape[1] == shape[1]
        and x.storage.kind == "sbuf"
        and x.dtype.name in _ctx.current().target.features.matmul_input_dtypes
    )


def _partition_broadcast_matmul(x, out) -> None:
    """out[p, :] = x[0, :] for every partition p, as NKI lowers broadcast_to [sources: arch-v2 "Alternative Use
    Case"]: nc_matmul(ones [1, P], x, is_stationary_onezero=True) into PSUM, then a copy into the SBUF result;
    512 columns (one PSUM bank) at a time."""
    p, width = out.shape
    ones = allocate((1, p), x.dtype, sbuf)
    nisa.memset(dst=ones, value=1.0)
    for c0 in range(0, width, BROADCAST_COLUMNS):
        c1 = builtins.min(c0 + BROADCAST_COLUMNS, width)
        acc = allocate((p, c1 - c0), float32, psum)
        nisa.nc_matmul(dst=acc, stationary=ones, moving=x[0:1, c0:c1], is_stationary_onezero=True)
        nisa.tensor_copy(dst=out[0:p, c0:c1], src=acc)


def gather_flattened(data, indices, axis=0, dtype=None) -> NkiTensor:
    out = allocate(indices.shape, dtype or data.dtype, sbuf)
    idx = indices
    if indices.dtype != uint32:
        idx = allocate(indices.shape, uint32, sbuf)
        nisa.tensor_copy(dst=idx, src=indices)
    nisa.nc_n_gather(dst=out, data=data, indices=idx)
    return out


def _assign(dst: NkiTensor, src: NkiTensor) -> None:
    """`view[...] = tile`: a DMA when HBM is involved, else an engine copy."""
    if dst.storage.kind == "hbm" or src.storage.kind == "hbm":
        nisa.dma_copy(dst=dst, src=src)
    else:
        nisa.tensor_copy(dst=dst, src=src)


def _fill(dst: NkiTensor, value) -> None:
    if dst.storage.kind == "hbm":
        raise rule_error(
            "err_hbm_tensor_with_init_value_not_supported",
            "assigning a constant to an HBM tensor",
            "fill an SBUF tile with nisa.memset and DMA it out",
        )
    nisa.memset(dst=dst, value=value)


# ---------------------------------------------------------------- element-wise math


def _out_dtype(dtype, *xs):
    if dtype is not None:
        return to_nki_dtype(dtype)
    for x in xs:
        if isinstance(x, NkiTensor):
            return x.dtype
    return float32


def _binary(name: str, x, y, dtype) -> NkiTensor:
    fn = globals()[name]
    if not isinstance(x, NkiTensor) and not isinstance(y, NkiTensor):
        raise rule_error("err_invalid_argument", f"nl.{name} needs at least one tile", "pass a tile")
    out_dt = _out_dtype(dtype, x, y)
    if isinstance(x, NkiTensor) and isinstance(y, NkiTensor):
        column = _column_operand(x, y)
        if column is not None:
            return column(name, fn, out_dt)
        out = allocate(x.shape, out_dt, sbuf)
        engine = nisa.engine.gpsimd if name == "power" else nisa.engine.unknown
        nisa.tensor_tensor(dst=out, data1=x, data2=y, op=fn, engine=engine)
        return out
    tile, scalar, reverse = (x, y, False) if isinstance(x, NkiTensor) else (y, x, True)
    if name == "power":
        raise rule_error(
            "err_invalid_argument",
            "nl.power with a scalar exponent is not supported on hardware",
            "pass the exponent as a tile (nl.full) or use nl.square / nl.rsqrt",
        )
    out = allocate(tile.shape, out_dt, sbuf)
    nisa.tensor_scalar(dst=out, data=tile, op0=fn, operand0=float(scalar), reverse0=reverse)
    return out


def _column_operand(x: NkiTensor, y: NkiTensor):
    """The nl wrappers broadcast a [P, 1] operand along the free dims (like NumPy; the official simulator
    accepts it): lowered to tensor_scalar with the column as its per-partition operand. None: no broadcast."""
    fx, fy = free_size(x), free_size(y)
    if fx == fy or 1 not in (fx, fy) or partitions(x) != partitions(y) or x.storage.kind == "hbm" or y.storage.kind == "hbm":
        return None
    tile, col, reverse = (x, y, False) if fy == 1 else (y, x, True)

    def lower(name, fn, out_dt):
        out = allocate(tile.shape, out_dt, sbuf)
        if name == "power":  # no scalar-operand power on hardware: a stride-0 view of the column on GpSimd
            column = col._data.reshape((col.shape[0],) + (1,) * (tile.ndim - 1))
            wide = NkiTensor(np.broadcast_to(column, tile.shape), col.storage, col.dtype)
            data1, data2 = (wide, tile) if reverse else (tile, wide)
            nisa.tensor_tensor(dst=out, data1=data1, data2=data2, op=fn, engine=nisa.engine.gpsimd)
        else:
            nisa.tensor_scalar(dst=out, data=tile, op0=fn, operand0=col, reverse0=reverse)
        return out

    return lower


def _make_binary(name: str, math: str):
    def fn(x, y, dtype=None):
        return _binary(name, x, y, dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Element-wise {math}; also an op specifier for nki.isa instructions."
    fn.__nki_op__ = name
    fn.__nki_scalar_operands__ = True  # x or y may be a Python number (at least one is a tile)
    fn.__module__ = "nki.language"
    return fn


add = _make_binary("add", "x + y")
subtract = _make_binary("subtract", "x - y")
multiply = _make_binary("multiply", "x * y")
divide = _make_binary("divide", "x / y")
maximum = _make_binary("maximum", "max(x, y)")
minimum = _make_binary("minimum", "min(x, y)")
abs_max = _make_binary("abs_max", "x if |x| > |y| else y (trn3)")
abs_min = _make_binary("abs_min", "x if |x| < |y| else y (trn3)")
power = _make_binary("power", "x ** y (tile exponent only)")
equal = _make_binary("equal", "x == y")
not_equal = _make_binary("not_equal", "x != y")
less = _make_binary("less", "x < y")
less_equal = _make_binary("less_equal", "x <= y")
greater = _make_binary("greater", "x > y")
greater_equal = _make_binary("greater_equal", "x >= y")
bitwise_and = _make_binary("bitwise_and", "x & y (ints)")
bitwise_or = _make_binary("bitwise_or", "x | y (ints)")
bitwise_xor = _make_binary("bitwise_xor", "x ^ y (ints)")
left_shift = _make_binary("left_shift", "x << y (ints)")
right_shift = _make_binary("right_shift", "x >> y (ints, logical)")
logical_and = _make_binary("logical_and", "x and y")
logical_or = _make_binary("logical_or", "x or y")
logical_xor = _make_binary("logical_xor", "x xor y")
fmod = _make_binary("fmod", "fmod(x, y)")
mod = _make_binary("mod", "x mod y")


def _activation(name: str, x, dtype) -> NkiTensor:
    out = allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.activation(dst=out, op=globals()[name], data=x)
    return out


def _make_activation(name: str):
    def fn(x, dtype=None):
        return _activation(name, x, dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Element-wise {name} on the Scalar Engine; also an activation op specifier."
    fn.__nki_op__ = name
    fn.__module__ = "nki.language"
    return fn


exp = _make_activation("exp")
log = _make_activation("log")
sqrt = _make_activation("sqrt")
rsqrt = _make_activation("rsqrt")
tanh = _make_activation("tanh")
sigmoid = _make_activation("sigmoid")
relu = _make_activation("relu")
gelu = _make_activation("gelu")
gelu_apprx_sigmoid = _make_activation("gelu_apprx_sigmoid")
gelu_apprx_tanh = _make_activation("gelu_apprx_tanh")
gelu_dx = _make_activation("gelu_dx")
gelu_apprx_sigmoid_dx = _make_activation("gelu_apprx_sigmoid_dx")
silu = _make_activation("silu")
silu_dx = _make_activation("silu_dx")
softplus = _make_activation("softplus")
mish = _make_activation("mish")
erf = _make_activation("erf")
erf_dx = _make_activation("erf_dx")
reciprocal = _make_activation("reciprocal")
square = _make_activation("square")
abs = _make_activation("abs")
sign = _make_activation("sign")
arctan = _make_activation("arctan")


def _tensor_scalar(x, op, operand, dtype=None, out=None, reverse=False) -> NkiTensor:
    out = out if out is not None else allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.tensor_scalar(dst=out, data=x, op0=op, operand0=operand, reverse0=reverse)
    return out


@_spec("negative")
def negative(x, dtype=None) -> NkiTensor:
    return _tensor_scalar(x, multiply, -1.0, dtype)


@_spec("invert")
def invert(x, dtype=None) -> NkiTensor:
    return _tensor_scalar(x, invert, 0, dtype)


@_spec("logical_not")
def logical_not(x, dtype=None) -> NkiTensor:
    return _tensor_scalar(x, equal, 0.0, dtype)


def _range_reduced(x, shift: float, dtype) -> NkiTensor:
    """Bring x + shift into [-pi, pi) before ScalarE's sin, as nl.sin does on hardware."""
    tmp = allocate(x.shape, float32, sbuf)
    nisa.tensor_scalar(dst=tmp, data=x, op0=add, operand0=float(np.pi + shift), op1=mod, operand1=float(2 * np.pi))
    nisa.tensor_scalar(dst=tmp, data=tmp, op0=subtract, operand0=float(np.pi))
    out = allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.activation(dst=out, op=sin, data=tmp)
    return out


@_spec("sin")
def sin(x, dtype=None) -> NkiTensor:
    return _range_reduced(x, 0.0, dtype)


@_spec("cos")
def cos(x, dtype=None) -> NkiTensor:
    return _range_reduced(x, np.pi / 2, dtype)


@_spec("tan")
def tan(x, dtype=None) -> NkiTensor:
    s, c = sin(x, float32), cos(x, float32)
    out = allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.tensor_tensor(dst=out, data1=s, data2=c, op=divide)
    return out


def _round(x, dtype, kind: str) -> NkiTensor:
    frac = allocate(x.shape, float32, sbuf)
    nisa.tensor_scalar(dst=frac, data=x, op0=fmod if kind == "trunc" else mod, operand0=1.0)
    out = allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.tensor_tensor(dst=out, data1=x, data2=frac, op=subtract)
    return out


@_spec("floor")
def floor(x, dtype=None) -> NkiTensor:
    return _round(x, dtype, "floor")


@_spec("trunc")
def trunc(x, dtype=None) -> NkiTensor:
    return _round(x, dtype, "trunc")


@_spec("ceil")
def ceil(x, dtype=None) -> NkiTensor:
    neg = negative(x, float32)
    fl = floor(neg, float32)
    return negative(fl, _out_dtype(dtype, x))


def where(condition, x, y, dtype=None) -> NkiTensor:
    shape_src = next(t for t in (condition, x, y) if isinstance(t, NkiTensor))
    out = allocate(shape_src.shape, _out_dtype(dtype, x, y), sbuf)
    if isinstance(y, NkiTensor):
        nisa.tensor_copy(dst=out, src=y)
    else:
        nisa.memset(dst=out, value=y)
    pred = allocate(condition.shape, uint8, sbuf)
    nisa.tensor_scalar(dst=pred, data=condition, op0=not_equal, operand0=0.0)
    nisa.tensor_copy_predicated(dst=out, src=x if isinstance(x, NkiTensor) else float(x), predicate=pred)
    return out


def dropout(x, rate, dtype=None) -> NkiTensor:
    out = allocate(x.shape, x.dtype, sbuf)
    nisa.dropout(dst=out, data=x, prob=rate)
    return out


# ---------------------------------------------------------------- reductions


def _reduce(op, x, axis, dtype, keepdims, negate=False) -> NkiTensor:
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    axes = tuple(sorted(int(a) % x.ndim for a in axes))
    if keepdims:
        shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    else:
        shape = tuple(n for i, n in enumerate(x.shape) if i not in axes) or (1,)
        if len(shape) == 1 and x.storage.kind != "hbm":
            shape = (shape[0], 1) if x.ndim > 1 else shape
    out = allocate(shape, _out_dtype(dtype, x), sbuf)
    nisa.tensor_reduce(dst=out, op=op, data=x, axis=axes, negate=negate, keepdims=keepdims)
    return out


def sum(x, axis, dtype=None, keepdims=False) -> NkiTensor:  # noqa: A001 - NKI's name
    return _reduce(add, x, axis, dtype, keepdims)


def max(x, axis, dtype=None, keepdims=False) -> NkiTensor:  # noqa: A001
    return _reduce(maximum, x, axis, dtype, keepdims)


def min(x, axis, dtype=None, keepdims=False) -> NkiTensor:  # noqa: A001
    return _reduce(minimum, x, axis, dtype, keepdims)


def prod(x, axis, dtype=None, keepdims=False) -> NkiTensor:
    return _reduce(multiply, x, axis, dtype, keepdims)


def all(x, axis, dtype=None) -> NkiTensor:  # noqa: A001
    return _reduce(logical_and, x, axis, dtype, False)


def mean(x, axis, dtype=None, keepdims=False) -> NkiTensor:
    total = _reduce(add, x, axis, float32, keepdims)
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    n = _math.prod(x.shape[int(a)] for a in axes)
    return _tensor_scalar(total, multiply, 1.0 / n, dtype or x.dtype)


def var(x, axis, dtype=None, keepdims=False) -> NkiTensor:
    mu = mean(x, axis, float32, keepdims=True)
    p = partitions(x)
    centered = allocate(x.shape, float32, sbuf)
    mu_col = mu.reshape((p, 1)) if free_size(mu) == 1 else mu
    nisa.tensor_scalar(dst=centered, data=x, op0=subtract, operand0=mu_col)
    sq = allocate(x.shape, float32, sbuf)
    nisa.activation(dst=sq, op=square, data=centered)
    return mean(sq, axis, dtype or x.dtype, keepdims=True)


def softmax(x, axis=-1, dtype=None) -> NkiTensor:
    """exp(x - max) / sum(exp(x - max)) along the last free axis, from ISA instructions."""
    p = partitions(x)
    neg_max = allocate((p, 1), float32, sbuf)
    nisa.tensor_reduce(dst=neg_max, op=maximum, data=x, axis=tuple(range(1, x.ndim)), negate=True)
    e = allocate(x.shape, float32, sbuf)
    total = allocate((p, 1), float32, sbuf)
    nisa.activation(dst=e, op=exp, data=x, bias=neg_max, reduce_op=add, reduce_res=total, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    inv = allocate((p, 1), float32, sbuf)
    nisa.reciprocal(dst=inv, data=total)
    out = allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.tensor_scalar(dst=out, data=e, op0=multiply, operand0=inv)
    return out


def rms_norm(x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None) -> NkiTensor:
    p = partitions(x)
    sq = allocate(x.shape, float32, sbuf)
    ss = allocate((p, 1), float32, sbuf)
    nisa.activation(dst=sq, op=square, data=x, reduce_op=add, reduce_res=ss, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    inv = allocate((p, 1), float32, sbuf)
    nisa.tensor_scalar(dst=inv, data=ss, op0=multiply, operand0=1.0 / float(n), op1=add, operand1=float(epsilon))
    nisa.activation(dst=inv, op=rsqrt, data=inv)
    normed = allocate(x.shape, float32, sbuf)
    nisa.tensor_scalar(dst=normed, data=x, op0=multiply, operand0=inv)
    out = allocate(x.shape, _out_dtype(dtype, x), sbuf)
    nisa.tensor_tensor(dst=out, data1=normed, data2=w, op=multiply)
    return out


def __getattr__(name: str):
    """Documented nki.language names the emulator does not provide yet raise a named error when used.
    `nl.range` (used by nki-library, accepted by the NKI front end as a plain loop range) is affine_range; it
    is served here so the module never shadows the builtin `range`. Names versions.API lists that the running
    version lacks (nl.int64 under 0.6, nl.if_else of NKI 0.8) are err_requires_nki_version, also an AttributeError
    so `hasattr(nl, name)` is False as in that version; the 64-bit dtypes are served here for that check."""
    if name == "range":
        return affine_range
    newer = gate.missing_name("nki.language", name)
    if newer is not None:
        raise newer
    if name in _VERSIONED_DTYPES:
        return _VERSIONED_DTYPES[name]
    if name in _DOCUMENTED_MISSING:

        def missing(*args, **kwargs):
            raise NkiNotSupportedError(
                "err_not_supported_yet", f"nki.language.{name} is not emulated by nkidev yet", None, kernel_location()
            )

        missing.__name__ = name
        return missing
    raise AttributeError(f"module 'nki.language' has no attribute {name!r}")


_DOCUMENTED_MISSING = {"atomic_rmw", "all_reduce", "loop_reduce"}

# ---------------------------------------------------------------- argument checks at the nl boundary
#
# Every public nl function is wrapped once (`_guard_module`) so that its arguments are checked by *name*
# before any math: a non-tile where a tile is needed, an axis outside the tile's rank, a count or a rate out
# of range is err_invalid_argument at the kernel line, never a NumPy exception from inside nkidev. The checks
# are data: parameter name -> check. (nki.isa ops check theirs as Rule objects in their declarations.)

_TILE_PARAMS = ("x", "y", "src", "data", "indices", "w", "condition", "dst")
_SCALAR_OK = {"where": ("x", "y")}  # parameters that may also be a Python number, per function
# parameters that may also be an NKI 0.7 tile/block grid (v2.33.0/.../nki.language.empty_like.html: "x: NkiTensor | NkiTileGrid
# | NkiBlockGrid", returning the same kind)
_GRID_OK = {"empty_like": ("x",)}


def _is_number(v) -> bool:
    return isinstance(v, NUMBER) and not isinstance(v, bool)


def _tile_check(fn_name: str, name: str, value, args: dict) -> str | None:
    if isinstance(value, NkiTensor) or (isinstance(value, NkiGrid) and name in _GRID_OK.get(fn_name, ())):
        return None
    scalar_ok = name in _SCALAR_OK.get(fn_name, ()) or getattr(globals().get(fn_name), "__nki_scalar_operands__", False)
    if scalar_ok and name in ("x", "y"):
        return None if _is_number(value) else f"{name} must be a tile or a number, got {type(value).__name__}"
    if name == "dst" and value is None:
        return None
    return f"{name} must be a tile (an NKI tensor), got {type(value).__name__}"


def _axis_check(fn_name: str, name: str, value, args: dict) -> str | None:
    axes = (value,) if isinstance(value, int | np.integer) and not isinstance(value, bool) else value
    if fn_name == "expand_dims" and not (isinstance(value, int | np.integer) and not isinstance(value, bool)):
        return f"{name}={value!r} must be one int"
    if (
        not isinstance(axes, tuple | list)
        or not axes
        or not builtins.all(isinstance(a, int | np.integer) and not isinstance(a, bool) for a in axes)
    ):
        return f"{name}={value!r} must be an int or a non-empty tuple of ints"
    x = args.get("x", args.get("data"))
    if isinstance(x, NkiTensor):
        rank = x.ndim + (1 if fn_name == "expand_dims" else 0)
        bad = [int(a) for a in axes if not -rank <= int(a) < rank]
        if bad:
            return f"{name}={value!r} is out of range for a {x.ndim}-d tile (valid: {-rank}..{rank - 1})"
        if len({int(a) % rank for a in axes}) != len(axes):
            return f"{name}={value!r} repeats an axis"
    return None


def _positive_int_check(fn_name: str, name: str, value, args: dict) -> str | None:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
        return f"{name}={value!r} must be a positive int"
    return None


def _finite_check(fn_name: str, name: str, value, args: dict) -> str | None:
    if not _is_number(value) or not _math.isfinite(float(value)):
        return f"{name}={value!r} must be a finite number"
    return None


def _rate_check(fn_name: str, name: str, value, args: dict) -> str | None:
    if isinstance(value, NkiTensor):
        return None
    if not _is_number(value) or not 0.0 <= float(value) <= 1.0:
        return f"{name}={value!r} must be a probability between 0 and 1 (or a tile)"
    return None


def _number_check(fn_name: str, name: str, value, args: dict) -> str | None:
    if not isinstance(value, int | float | bool | np.number):
        return f"{name}={value!r} must be a number"
    return None


# Shapes that passed, with their element types ((1.0, 2) == (1, 2), but a float dim is an error): a loop
# allocates the same shapes over and over.
_GOOD_SHAPES: set[tuple] = set()


def _shape_check(fn_name: str, name: str, value, args: dict) -> str | None:
    if value.__class__ is tuple:  # the common case: a tuple of positive ints (not bools), checked inline
        for d in value:
            if d.__class__ is not int or d <= 0:
                break
        else:
            return None if value else f"{name}={value!r} must be a tuple of positive ints"
    key = (value, tuple(map(type, value))) if value.__class__ is tuple else None
    try:
        if key in _GOOD_SHAPES:
            return None
    except TypeError:  # an unhashable dim: the check below names it
        key = None
    dims = (value,) if isinstance(value, int | np.integer) else value
    if (
        not isinstance(dims, tuple | list)
        or not dims
        or not builtins.all(isinstance(d, int | np.integer) and not isinstance(d, bool) and d > 0 for d in dims)
    ):
        return f"{name}={value!r} must be a tuple of positive ints"
    if key is not None and len(_GOOD_SHAPES) < 10_000:
        _GOOD_SHAPES.add(key)
    return None


_ARGUMENT_CHECKS = {
    **dict.fromkeys(_TILE_PARAMS, _tile_check),
    "axis": _axis_check,
    "n": _positive_int_check,
    "epsilon": _finite_check,
    "rate": _rate_check,
    "shape": _shape_check,
    "fill_value": _number_check,
}

_NEEDS_ARGS = frozenset({_axis_check})  # checks that read the call's other arguments (the `args` dict)


def _guard(fn):
    """`fn` with its arguments checked by name first (positional ones mapped through its signature)."""
    params = [p for p in _inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    checked = {p.name: _ARGUMENT_CHECKS[p.name] for p in params if p.name in _ARGUMENT_CHECKS}
    if not checked:
        return fn
    names = [p.name for p in params]
    fn_name = fn.__name__
    exact = _guard_exact(fn, checked)
    if exact is not None:
        return exact

    @_functools.wraps(fn)
    def guarded(*args, **kwargs):
        given = dict(zip(names, args))
        given.update(kwargs)
        for name, check in checked.items():
            if name in given:
                problem = check(fn_name, name, given[name], given)
                if problem:
                    raise rule_error("err_invalid_argument", f"nl.{fn_name}: {problem}", "pass the kind of value named here")
        return fn(*args, **kwargs)

    return guarded


def _guard_exact(fn, checked: dict):
    """_guard for a function whose checked parameters are all required and read no other argument (nl.ndarray's
    shape: a loop allocates a tile per iteration): a function with fn's own parameters and defaults, generated,
    so a call packs no *args/**kwargs. None when fn's signature does not allow it."""
    params = list(_inspect.signature(fn).parameters.values())
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params) or _NEEDS_ARGS.intersection(checked.values()):
        return None
    if any(p.default is not p.empty for p in params if p.name in checked):  # checked only when given: needs the general guard
        return None
    scope = {"_fn": fn, "_fn_name": fn.__name__, "_rule_error": rule_error}
    head = _generated.parameter_list(params, scope)
    call = [p.name if p.kind is p.POSITIONAL_OR_KEYWORD else f"{p.name}={p.name}" for p in params]
    body = []
    for name, check in checked.items():
        scope[f"_check_{name}"] = check
        body += [
            f"    problem = _check_{name}(_fn_name, {name!r}, {name}, None)",  # None: not in _NEEDS_ARGS
            "    if problem:",
            '        raise _rule_error("err_invalid_argument", f"nl.{_fn_name}: {problem}", "pass the kind of value named here")',
        ]
    src = "\n".join([f"def {fn.__name__}({head}):", *body, f"    return _fn({', '.join(call)})", ""])
    return _functools.wraps(fn)(_generated.define(fn.__name__, src, "language", scope))


def _guard_module() -> None:
    for name, value in list(globals().items()):
        if not name.startswith("_") and isinstance(value, _types.FunctionType) and value.__module__ in (__name__, "nki.language"):
            globals()[name] = _guard(value)


_guard_module()

# ---------------------------------------------------------------- NkiTensor operators


def _operator(fn, reverse: bool):
    def method(self, other):
        return fn(other, self) if reverse else fn(self, other)

    return method


def _setitem(self, key, value) -> None:
    dst = self[key]
    if isinstance(value, NkiTensor):
        _assign(dst, value)
    else:
        _fill(dst, value)


# Python operators with no NKI meaning on tile values, and the nl function that does it on the device.
# (== and != keep Python's identity semantics: tensors are compared and hashed by identity elsewhere.)
_UNSUPPORTED_OPERATORS = {
    "lt": ("<", "nl.less"),
    "le": ("<=", "nl.less_equal"),
    "gt": (">", "nl.greater"),
    "ge": (">=", "nl.greater_equal"),
    "floordiv": ("//", "nl.floor(nl.divide(a, b))"),
    "mod": ("%", "nl.mod"),
    "pow": ("**", "nl.power"),
    "and": ("&", "nl.bitwise_and / nl.logical_and"),
    "or": ("|", "nl.bitwise_or / nl.logical_or"),
    "xor": ("^", "nl.bitwise_xor"),
    "lshift": ("<<", "nl.left_shift"),
    "rshift": (">>", "nl.right_shift"),
}
_UNSUPPORTED_UNARY = {
    "invert": ("~", "nl.invert"),
    "abs": ("abs()", "nl.abs"),
    "pos": ("unary +", "the tile itself"),
    "int": ("int()", "a register: nisa.scalar_load"),
    "float": ("float()", "a register: nisa.scalar_load"),
    "index": ("use as an index or range() bound", "a register (nisa.scalar_load) with .ap(scalar_offset=...) or nl.fori_loop"),
}


def _unsupported(symbol: str, device_op: str):
    def method(self, *_other):
        raise rule_error(
            "err_python_operator_on_tile",
            f"Python operator {symbol} on tile {self.name!r} {self.shape}: its values exist only on the device",
            f"compute it on the device with {device_op}; Python control flow cannot depend on tile values",
        )

    return method


def _tensor_data(self: NkiTensor) -> NkiTensor:
    """NKI 0.7: a tensor's `.data` is the tensor itself, the operand a grid selection's `.data` also is, so code written
    for grids takes plain tensors (the NkiTileGrid docs example passes `nl.ndarray(...).data` to nisa.dma_copy)."""
    gate.require("nki.language.NkiTensor.data")
    return self


def install_tensor_methods() -> None:
    """Give NkiTensor its operators (`a + b` is nl.add, `a @ b` nl.matmul, ...) and `t[...] = x`: they are
    nki.language operations, so this layer adds them to the class the tensor layer defines. Operators with no
    NKI meaning on tiles raise err_python_operator_on_tile instead of Python's bare TypeError."""
    binary = {"add": add, "sub": subtract, "mul": multiply, "truediv": divide}
    for name, fn in binary.items():
        setattr(NkiTensor, f"__{name}__", _operator(fn, False))
        setattr(NkiTensor, f"__r{name}__", _operator(fn, True))
    NkiTensor.data = property(_tensor_data)
    NkiTensor.__matmul__ = _operator(matmul, False)
    NkiTensor.__neg__ = lambda self: negative(self)
    NkiTensor.__setitem__ = _setitem
    for name, (symbol, device_op) in _UNSUPPORTED_OPERATORS.items():
        setattr(NkiTensor, f"__{name}__", _unsupported(symbol, device_op))
        if name not in ("lt", "le", "gt", "ge"):  # comparisons reflect onto each other, not onto __r*__
            setattr(NkiTensor, f"__r{name}__", _unsupported(symbol, device_op))
    for name, (symbol, device_op) in _UNSUPPORTED_UNARY.items():
        setattr(NkiTensor, f"__{name}__", _unsupported(symbol, device_op))


install_tensor_methods()
gate.apply(globals(), "nki.language")  # names newer or older than the running NKI version raise a named error when used

__all__ = [
    n
    for n in list(globals())
    if not n.startswith("_")
    and n
    not in (
        "annotations",
        "builtins",
        "contextlib",
        "dataclasses",
        "np",
        "nisa",
        "lookup",
        "to_nki_dtype",
        "allocate",
        "kernel_location",
        "rule_error",
        "free_size",
        "partitions",
        "VirtualRegister",
        "NkiNotSupportedError",
        "DTYPES",
        "DynSlice",
        "f32",
        "from_array",
        "install_tensor_methods",
        "gate",
        "empty_like_grid",
        "NkiScalar",
    )
]
