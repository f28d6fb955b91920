"""Corpus-harness stand-in for the private `neuron_dtypes` package (part of the Neuron compiler),
covering only what nki-library's test utilities call: static_cast, is_float_type, sizeinbytes, finfo,
bfloat16 and the x4 MX dtypes (a best-effort model: 4 sub-byte values packed per element)."""

import ml_dtypes
import numpy as np


class _X4:
    def __init__(self, name, elem, bits, storage):
        self.name, self.elem, self.bits, self.storage = name, np.dtype(elem), bits, np.dtype(storage)

    def __repr__(self):
        return f"neuron_dtypes.{self.name}"


float8_e4m3fn_x4 = _X4("float8_e4m3fn_x4", ml_dtypes.float8_e4m3fn, 8, np.uint32)
float8_e5m2_x4 = _X4("float8_e5m2_x4", ml_dtypes.float8_e5m2, 8, np.uint32)
float4_e2m1fn_x4 = _X4("float4_e2m1fn_x4", ml_dtypes.float4_e2m1fn, 4, np.uint16)
_X4S = {x.name: x for x in (float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4)}
bfloat16 = bfloat = ml_dtypes.bfloat16
float8_e4m3 = ml_dtypes.float8_e4m3
float8_e4m3fn = ml_dtypes.float8_e4m3fn
float8_e5m2 = ml_dtypes.float8_e5m2
float8_e8m0fnu = ml_dtypes.float8_e8m0fnu
finfo = ml_dtypes.finfo


def _resolve(dtype):
    if isinstance(dtype, _X4):
        return dtype
    name = getattr(dtype, "name", None) or str(dtype)
    name = str(name).removeprefix("nl.").removeprefix("torch.")
    if name in _X4S:
        return _X4S[name]
    inner = getattr(dtype, "dtype", None)
    if inner is not None and not isinstance(dtype, np.dtype):
        try:
            return np.dtype(inner)
        except TypeError:
            pass
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(getattr(ml_dtypes, name))


def _pack(values, x4):
    q = np.asarray(values, np.float32).astype(x4.elem)
    codes = q.view(np.uint8).astype(np.uint32)
    if x4.bits == 4:
        codes &= 0xF
    codes = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 4, 4)
    out = np.zeros(codes.shape[:-1], np.uint32)
    for i in range(4):
        out |= codes[..., i] << np.uint32(i * x4.bits)
    return out.astype(x4.storage)


def _unpack(packed, x4):
    p = np.asarray(packed).astype(np.uint32)
    mask = np.uint32((1 << x4.bits) - 1)
    codes = np.stack([(p >> np.uint32(i * x4.bits)) & mask for i in range(4)], axis=-1).astype(np.uint8)
    vals = codes.view(x4.elem).astype(np.float32)
    return vals.reshape(*vals.shape[:-2], vals.shape[-2] * 4)


def static_cast(arr, dtype, src_dtype=None):
    target = _resolve(dtype)
    src = _resolve(src_dtype) if src_dtype is not None else None
    if isinstance(src, _X4):
        arr = _unpack(arr, src)
    if isinstance(target, _X4):
        return _pack(arr, target)
    return np.asarray(arr).astype(target)


def is_float_type(dtype):
    try:
        d = np.dtype(dtype)
    except TypeError:
        return False
    return d.kind == "f" or d in (
        np.dtype(ml_dtypes.bfloat16),
        np.dtype(ml_dtypes.float8_e4m3),
        np.dtype(ml_dtypes.float8_e4m3fn),
        np.dtype(ml_dtypes.float8_e5m2),
        np.dtype(ml_dtypes.float8_e8m0fnu),
    )


def sizeinbytes(dtype):
    d = _resolve(dtype)
    if isinstance(d, _X4):
        return d.bits // 2
    return d.itemsize
