"""Functions for the source-check tests: each reaches around the NKI API in one way (none is run)."""

import contextlib
import io
import sys
from inspect import currentframe as frame

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.emulator import memory


def reference(x):
    return x


REF_ALIAS = reference


@nki.jit
def private_attr(x):
    return np.asarray(x._data)  # line 25


@nki.jit
def storage_attr(x):
    return x.storage.array  # line 30


@nki.jit
def frame_walk(x):
    return sys._getframe(1).f_locals  # line 35


@nki.jit
def aliased_frame(x):
    return frame().f_back  # line 40


@nki.jit
def dynamic_getattr(x):
    return getattr(x, "_da" + "ta")  # line 45


@nki.jit
def capture_stdout(x):
    with contextlib.redirect_stdout(io.StringIO()):  # line 50
        nl.device_print("x", x)


@nki.jit
def internal_module(x):
    return memory.raw(x)  # line 56


@nki.jit
def calls_alias(x):
    return REF_ALIAS(x)  # line 61


def _helper(x):
    return eval("x._data")  # line 65


@nki.jit
def via_helper(x):
    return _helper(x)


class Tiler(nl.NKIObject):
    def __init__(self, size):
        self._size = size  # own private state: fine

    def tiles(self, n):
        return range((n + self._size - 1) // self._size)


@nki.jit
def honest(x, act="exp"):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    for _ in Tiler(128).tiles(x.shape[0]):
        nisa.activation(dst=tile, op=getattr(nl, act), data=tile, scale=float(np.sqrt(2.0)))
    nisa.dma_copy(dst=out, src=tile)
    return out
