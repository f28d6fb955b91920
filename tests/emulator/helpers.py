"""Small helpers to build on-chip tiles directly and read them back, and for kernels under test (tests only)."""

from __future__ import annotations

import inspect

import numpy as np

from nkidev.emulator import context
from nkidev.emulator import isa as nisa
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


def marked_line(kernel, mark: str = "# <-") -> int:
    """The one source line of `kernel` (a function or a jitted kernel) that ends with `mark`: where a test expects
    the kernel's error to point."""
    lines, start = inspect.getsourcelines(getattr(kernel, "fn", kernel))
    (hit,) = [start + i for i, text in enumerate(lines) if text.rstrip().endswith(mark)]
    return hit


def sbuf_load(x, dtype=None) -> nl.NkiTensor:
    """Inside a kernel: an SBUF tile holding the HBM tensor x (cast to dtype on the DMA when given)."""
    t = nl.ndarray(x.shape, dtype=dtype or x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return t


def to_hbm(t) -> nl.NkiTensor:
    """Inside a kernel: a shared-HBM copy of tile t, to return from the kernel."""
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o
