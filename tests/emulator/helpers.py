"""Small helpers to build on-chip tiles directly and read them back (tests only)."""

from __future__ import annotations

import numpy as np

from nkidev.emulator import context
from nkidev.emulator import language as nl
from nkidev.emulator.context import Context, EmulatorOptions
from nkidev.emulator.dtypes import to_nki_dtype
from nkidev.hardware import get_target


def use_target(name: str) -> None:
    context.set_current(Context(get_target(name), EmulatorOptions(target=name)))


def tile(values, dtype=None, buffer=None) -> nl.NkiTensor:
    values = np.asarray(values)
    dt = to_nki_dtype(dtype if dtype is not None else values.dtype)
    t = nl.ndarray(values.shape, dt, buffer=buffer if buffer is not None else nl.sbuf)
    t._data[...] = values.astype(dt.storage)
    return t


def empty(shape, dtype=np.float32, buffer=None) -> nl.NkiTensor:
    return nl.ndarray(shape, to_nki_dtype(dtype), buffer=buffer if buffer is not None else nl.sbuf)


def read(t) -> np.ndarray:
    from nkidev.emulator.memory import raw

    data = np.array(raw(t))
    return data.astype(np.float64) if t.dtype.is_float else data
