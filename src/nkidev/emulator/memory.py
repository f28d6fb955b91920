"""Reading and writing operands: storage values <-> fp32 compute values, through views or
run-time (indirect) addresses, keeping PSUM accumulation-group state in step.
"""

from __future__ import annotations

import numpy as np

from nkidev.emulator.dtypes import from_f32, to_f32
from nkidev.emulator.tensor import NkiTensor, resolve_indirect, settle_copies
from nkidev.emulator.tensor import stored_values as raw

_F32 = np.dtype(np.float32)


def read(t: NkiTensor) -> np.ndarray:
    """Stored values an engine instruction reads; reading PSUM closes its accumulation group."""
    if t.storage.acc is not None:
        acc_view(t)[...] = False
    return raw(t)


def f32(t: NkiTensor) -> np.ndarray:
    """Values as fp32, the engines' compute precision."""
    return to_f32(read(t), t.dtype)


def rows(t: NkiTensor) -> np.ndarray:
    """fp32 values shaped (partitions, elements per partition)."""
    x = f32(t)
    if x.ndim == 2:  # already that shape (a reshape would only make another view of it)
        return x
    return x.reshape(x.shape[0] if x.ndim else 1, -1)


def store_raw(t: NkiTensor, values: np.ndarray, oob_skip: bool = False) -> None:
    """Write values already in t's storage dtype, reshaped to the view."""
    _begin_write(t)  # also for writes outside an instruction (the legacy front end's assignments)
    if t.dyn is None:
        t._data[...] = values.reshape(t._data.shape)
        return
    flat, idx = resolve_indirect(t, oob_skip)
    vals = np.broadcast_to(values.reshape(idx.shape), idx.shape)
    keep = idx >= 0
    flat[idx[keep]] = vals[keep]


def store(t: NkiTensor, values: np.ndarray) -> None:
    """Write fp32 results: round to nearest even into t's dtype (ints saturate)."""
    if values.__class__ is not np.ndarray or values.dtype != _F32:
        values = np.asarray(values, dtype=np.float32)
    dt = t.dtype
    data = t._data
    if t.dyn is None and dt.kind == "float" and dt.name != "tfloat32" and values.size == data.size:
        # cast while copying, straight into the destination: the same rounding as from_f32's astype without
        # its intermediate array (one pass over the data instead of two)
        _begin_write(t)
        if values.shape == data.shape:
            data[...] = values  # assignment casts as copyto(casting="unsafe") does, without its Python-level wrapper
        else:
            np.copyto(data, values.reshape(data.shape), casting="unsafe")
        return
    store_raw(t, from_f32(values, dt))


def _begin_write(t: NkiTensor) -> None:
    """What store does before it writes a plain view's values: settle the storage (deferred work, the fill of a
    fresh allocation), close a PSUM accumulation group there, and count the write (psum.identity)."""
    st = t.storage
    if st.pending is not None:
        st.flush()
    if st.acc is not None:
        acc_view(t)[...] = False
    if st.borrowed:
        st.keep_original()
    st.version += 1
    st.origin = None
    if st.copies is not None:  # the storages copying it lazily take their copy first (tensor.py, "Lazy copies")
        settle_copies(st)


def result_into(t: NkiTensor, shape: tuple, inputs: tuple) -> np.ndarray | None:
    """t's own values as the `out=` of an element-wise NumPy call whose fp32 result has `shape` (partitions,
    elements), or None: store() the result instead. Only an fp32 view laid out like a fresh C-order result,
    that each array input either is exactly or does not overlap: NumPy then runs the loop it runs for a fresh
    output (it picks loops by strides and overlap), so the values are the same bits, without store()'s copy.
    When it returns a view, the write has begun (store's bookkeeping is done): the caller computes into it."""
    if t.dyn is not None or t.dtype.name != "float32":
        return None
    data = t._data
    if data.dtype != _F32 or not data.flags.c_contiguous or data.size != shape[0] * shape[1]:
        return None
    out = data.reshape(shape)
    for x in inputs:
        if x.__class__ is np.ndarray and np.may_share_memory(x, out) and not _same_view(x, out):
            return None
    _begin_write(t)
    return out


def _same_view(x: np.ndarray, out: np.ndarray) -> bool:
    same = x.shape == out.shape and x.strides == out.strides and x.dtype == out.dtype
    return same and x.__array_interface__["data"][0] == out.__array_interface__["data"][0]


def acc_view(t: NkiTensor) -> np.ndarray:
    """The PSUM accumulation mask for exactly the elements of view t."""
    st = t.storage
    if st.acc is None:
        st.acc = np.zeros(st.array.shape, dtype=bool)
    if t.dyn is not None:
        return st.acc
    data = t._data
    item = data.itemsize
    off = t._off if t._off is not None else data.__array_interface__["data"][0] - st.ptr
    strides = tuple(s // item for s in data.strides)
    if min(strides, default=0) < 0:
        return np.lib.stride_tricks.as_strided(st.acc.reshape(-1)[off // item :], shape=data.shape, strides=strides)
    # the mask is one bool per element: the view's element offset and strides are the mask view's byte ones
    return np.ndarray(data.shape, dtype=np.bool_, buffer=st.acc, offset=off // item, strides=strides)


def scalar_or_vector(v, p: int) -> np.ndarray | np.float32:
    """A scalar operand, or a [P, 1] tile as a (P, 1) fp32 column that broadcasts along the free dim."""
    if isinstance(v, NkiTensor):
        return f32(v).reshape(p, 1)
    return np.float32(v)
