"""NKI dtypes as data, and the two casts every engine does: storage -> fp32 and fp32 -> storage.

Each `nl.<dtype>` is an `NkiDType`. It carries the NumPy storage dtype (ml_dtypes for bf16/fp8),
so `array.astype(nl.bfloat16)` and `np.zeros(n, nl.float8_e4m3)` work in user test harnesses.
"""

from __future__ import annotations

import sys
import threading

import ml_dtypes
import numpy as np

from nkidev.errors import NkiError


class NkiDType:
    """One NKI dtype. A plain immutable value, not a dataclass: `dataclasses.asdict` of a kernel config
    holding `nl.bfloat16` must copy it as a leaf (nki-library builds test kwargs that way), and copies,
    deep copies and pickles are the same dtype object."""

    __slots__ = ("name", "storage", "itemsize", "kind", "mantissa_bits", "element", "lanes")

    def __init__(self, name: str, storage, itemsize: int, kind: str, mantissa_bits: int = 0, element=None, lanes: int = 1):
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "storage", np.dtype(storage))  # how the emulator stores one element
        set_(self, "itemsize", itemsize)  # bytes on the device
        set_(self, "kind", kind)  # "float" | "int" | "uint" | "bool" | "packed"
        set_(self, "mantissa_bits", mantissa_bits)  # precision rank of float types (fp32 23, tf32 10, bf16 7, ...)
        set_(self, "element", None if element is None else np.dtype(element))  # packed types: one packed value's dtype
        set_(self, "lanes", lanes)  # packed types: values per element

    def __setattr__(self, name, value):
        raise AttributeError(f"nl.{self.name} is immutable")

    def __copy__(self) -> NkiDType:
        return self

    def __deepcopy__(self, memo) -> NkiDType:
        return self

    def __reduce__(self):
        return (lookup, (self.name,))

    @property
    def dtype(self) -> np.dtype:
        """NumPy interop: np.dtype(nl.bfloat16) and arr.astype(nl.bfloat16) use this."""
        return self.storage

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    def __eq__(self, other) -> bool:
        if other is self:
            return True
        found = lookup(other)
        return found is not None and found.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __str__(self) -> str:
        return self.name


def _d(name, storage, itemsize, kind, mant=0, element=None, lanes=1) -> NkiDType:
    return NkiDType(name, storage, itemsize, kind, mant, element, lanes)


DTYPES: dict[str, NkiDType] = {
    d.name: d
    for d in (
        _d("bool_", np.uint8, 1, "bool"),
        _d("int8", np.int8, 1, "int"),
        _d("int16", np.int16, 2, "int"),
        _d("int32", np.int32, 4, "int"),
        _d("int64", np.int64, 8, "int"),  # NKI 0.7: scalar_load/scalar_store tiles (v2.33.0/_modules/nki/language.html)
        _d("uint8", np.uint8, 1, "uint"),
        _d("uint16", np.uint16, 2, "uint"),
        _d("uint32", np.uint32, 4, "uint"),
        _d("uint64", np.uint64, 8, "uint"),  # NKI 0.7 (v2.33.0/_modules/nki/language.html)
        _d("float16", np.float16, 2, "float", 10),
        _d("float32", np.float32, 4, "float", 23),
        _d("bfloat16", ml_dtypes.bfloat16, 2, "float", 7),
        _d("tfloat32", np.float32, 4, "float", 10),  # stored as fp32 with the low 13 mantissa bits rounded off
        _d("float8_e4m3", ml_dtypes.float8_e4m3, 1, "float", 3),
        _d("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 1, "float", 3),
        _d("float8_e5m2", ml_dtypes.float8_e5m2, 1, "float", 2),
        _d("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, 1, "float", 0),
        # MX packed types: four values per element, value k in the k-th byte (fp8, 32-bit element) or the
        # k-th nibble (fp4, 16-bit element), little-endian (nki.language dtype docs; mxfp-matmul deep dive)
        _d("float8_e5m2_x4", np.uint32, 4, "packed", 0, ml_dtypes.float8_e5m2, 4),
        _d("float8_e4m3fn_x4", np.uint32, 4, "packed", 0, ml_dtypes.float8_e4m3fn, 4),
        _d("float4_e2m1fn_x4", np.uint16, 2, "packed", 0, ml_dtypes.float4_e2m1fn, 4),
    )
}

# NumPy storage dtype -> default NKI dtype (the reverse map used for kernel arguments).
_BY_STORAGE: dict[np.dtype, NkiDType] = {}
for _dt in DTYPES.values():
    if _dt.kind != "packed" and _dt.name not in ("tfloat32", "bool_"):
        _BY_STORAGE.setdefault(_dt.storage, _dt)
_BY_STORAGE[np.dtype(np.bool_)] = DTYPES["bool_"]

_ALIASES = {
    "bool": "bool_",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp16": "float16",
    "half": "float16",
    "float": "float32",
    "tf32": "tfloat32",
    "fp8_e4m3": "float8_e4m3",
    "fp8_e5m2": "float8_e5m2",
    "float32r": "float32",
}


def lookup(x) -> NkiDType | None:
    """The NkiDType for anything dtype-like (NkiDType, np.dtype, numpy/ml_dtypes type, name, torch dtype)."""
    if isinstance(x, NkiDType):
        return x
    if isinstance(x, str):
        key = x.removeprefix("torch.").removeprefix("nl.").removeprefix("np.")
        key = _ALIASES.get(key, key)
        if key in DTYPES:
            return DTYPES[key]
    try:
        return _BY_STORAGE.get(np.dtype(x))
    except TypeError:
        pass
    text = str(x)
    return lookup(text) if text != x and "torch." in text else None


def to_nki_dtype(x) -> NkiDType:
    found = lookup(x)
    if found is None:
        raise NkiError(
            "err_unsupported_dtype",
            f"{x!r} is not an NKI dtype",
            "use an nl dtype such as nl.float32, nl.bfloat16, nl.float8_e4m3, nl.int32",
        )
    return found


_U32 = np.dtype(np.uint32)
_U16 = np.dtype(np.uint16)
_U8 = np.dtype(np.uint8)
_F32 = np.dtype(np.float32)
_BF16 = np.dtype(ml_dtypes.bfloat16)
# one-byte float storage dtype -> its 256 values as fp32, computed by ml_dtypes itself (so a lookup is its cast, bit for bit)
_BYTE_FLOATS: dict[np.dtype, np.ndarray] = {
    d.storage: np.arange(256, dtype=np.uint8).view(d.storage).astype(_F32) for d in DTYPES.values() if d.kind == "float" and d.itemsize == 1
}


def widen_into(out: np.ndarray, values: np.ndarray) -> None:
    """out[...] = values as fp32, bit for bit what `values.astype(np.float32)` gives, without ml_dtypes' per-element
    cast loop (2-3x slower): a bf16 is the high half of an fp32, and a one-byte float is one of 256 values."""
    dt = values.dtype
    if dt == _BF16:
        np.left_shift(values.view(_U16), 16, out=out.view(_U32), dtype=_U32)
        return
    table = _BYTE_FLOATS.get(dt)
    if table is not None:
        np.take(table, values.view(_U8), out=out, mode="clip")  # indices are bytes: never out of range, no buffering
    else:
        np.copyto(out, values, casting="unsafe")


def to_f32(values: np.ndarray, dt: NkiDType) -> np.ndarray:
    """Widen stored values to fp32, the precision every engine computes in."""
    if values.dtype == _F32:
        return values
    if isinstance(values, np.ndarray) and (values.dtype == _BF16 or values.dtype in _BYTE_FLOATS):
        out = scratch_f32(values.shape)
        widen_into(out, values)
        return out
    return values.astype(_F32)


# ---------------------------------------------------------------- recycled conversion buffers
#
# An engine widens a bf16/fp8 tile to fp32 for every instruction that reads it: a large temporary that is
# dropped right after. Memory new from the OS costs a page fault per 4 KiB on first touch, and malloc gives
# large freed blocks back, so each conversion faulted its buffer in again. While a run is in progress
# (tensor.recycling), conversions take a buffer of their size that nothing references any more (only this pool
# does: its reference count says so) instead; the values written into it are the same either way.

_SCRATCH_PER_SIZE = 4
_SCRATCH_MIN = 1 << 16  # smaller ones come from malloc's own free lists
_scratch_lock = threading.Lock()
_scratch: dict[int, list[np.ndarray]] = {}
_scratch_runs = [0]


def scratch_f32(shape: tuple) -> np.ndarray:
    """An fp32 array of `shape` whose memory nothing else references (contents undefined)."""
    n = 1
    for s in shape:
        n *= s
    nbytes = 4 * n
    if nbytes < _SCRATCH_MIN or not _scratch_runs[0]:
        return np.empty(shape, _F32)
    with _scratch_lock:
        bufs = _scratch.setdefault(nbytes, [])
        for buf in bufs:
            if sys.getrefcount(buf) == _FREE_REFS:  # the list and this loop hold it: no view of it is alive
                return buf.view(_F32).reshape(shape)
        buf = np.empty(nbytes, _U8)
        if len(bufs) < _SCRATCH_PER_SIZE:
            bufs.append(buf)
    return buf.view(_F32).reshape(shape)


def scratch_runs(delta: int) -> None:
    """A run starts (+1) or ends (-1); the buffers are released when none is in progress."""
    with _scratch_lock:
        _scratch_runs[0] += delta
        if not _scratch_runs[0]:
            _scratch.clear()


def _free_refs() -> int:
    bufs = [np.empty(1, _U8)]
    for buf in bufs:
        return sys.getrefcount(buf)


_FREE_REFS = _free_refs()


def fill_uninitialized(array: np.ndarray, dt: NkiDType) -> None:
    """Fill with the uninitialized sentinel (NaN, or 4 for ints) by bit pattern: several times faster
    than letting ml_dtypes convert a float NaN for every element."""
    found = _SENTINELS.get(dt.name)
    if found is None:
        found = _SENTINELS[dt.name] = _sentinel(dt)
    view, bits = found
    (array.view(view) if view is not None else array).fill(bits)


def fill_value(dt: NkiDType, fill) -> np.ndarray:
    """EmulatorOptions.fill as a fresh allocation of dtype dt holds it: cast to its storage dtype (ints by way of
    int64, so a float fill truncates)."""
    return np.asarray(fill if dt.is_float else np.array(fill).astype(np.int64)).astype(dt.storage)


def is_uninitialized(array: np.ndarray, dt: NkiDType, fill=None) -> bool:
    """Whether every element still holds what a fresh allocation holds: the uninitialized sentinel (storage raw
    bits, as fill_uninitialized wrote) or, when given, the run's other `fill` (fill_value), compared bit for bit
    so that a NaN fill matches itself."""
    if fill is not None:
        want = fill_value(dt, fill).reshape(1)
        width = np.dtype(f"u{want.itemsize}")
        return bool(np.all(np.ascontiguousarray(array).view(width) == want.view(width)[0]))
    found = _SENTINELS.get(dt.name)
    if found is None:
        found = _SENTINELS[dt.name] = _sentinel(dt)
    view, bits = found
    return bool(np.all((array.view(view) if view is not None else array) == bits))


def _sentinel(dt: NkiDType) -> tuple[np.dtype | None, object]:
    """(unsigned view dtype or None, the fill value): NaN's bit pattern for floats, 4 for the rest."""
    if dt.name == "float8_e8m0fnu":
        return _U8, np.uint8(0xFF)  # e8m0's NaN encoding
    if dt.kind == "float":
        view = np.dtype(f"u{dt.storage.itemsize}")
        return view, np.array(np.nan, dtype=dt.storage).view(view)[()]
    return None, 4


_SENTINELS: dict[str, tuple[np.dtype | None, object]] = {}


def _round_tf32(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=_F32).view(_U32)
    rounded = (bits + (np.uint32(0x0FFF) + ((bits >> np.uint32(13)) & np.uint32(1)))) & np.uint32(0xFFFFE000)
    out = rounded.view(_F32)
    return np.where(np.isfinite(x), out, x).astype(_F32)


def from_f32(values: np.ndarray, dt: NkiDType) -> np.ndarray:
    """Narrow fp32 results to the destination dtype: round to nearest even; ints also saturate."""
    st = dt.storage
    if dt.kind == "float":
        if dt.name == "tfloat32":
            return _round_tf32(values)
        return values.astype(st) if values.dtype != st else values
    if dt.kind == "bool":
        return (values != 0).astype(st)
    if dt.kind == "packed":
        return values.astype(st)
    if values.dtype.kind in "iu":  # already integer (bit-exact paths)
        return values.astype(st)
    info = np.iinfo(st)
    with np.errstate(invalid="ignore"):
        r = np.rint(values.astype(np.float64))  # rint is round-half-to-even
    r = np.nan_to_num(r, nan=0.0, posinf=info.max, neginf=info.min)
    return np.clip(r, info.min, info.max).astype(st)


def cast_array(values: np.ndarray, src: NkiDType, dst: NkiDType) -> np.ndarray:
    """Cast stored values between dtypes through fp32, as DMA and engines do; same dtype is bit-exact.

    Integer to integer goes through fp32 too: the dma_copy page's two-step conversion (src dtype to float32, then
    float32 to dst dtype, https://awsdocs-neuron.readthedocs-hosted.com/en/v2.32.0/nki/api/generated/nki.isa.dma_copy.html),
    so an int32 past 2**24 lands on a multiple of its fp32 spacing, as tensor_copy's fp32 cast already did."""
    if src is dst or src == dst:
        return values
    return from_f32(to_f32(values, src), dst)
