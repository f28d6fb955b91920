"""Cheat (cheat_input_independent): computes once, keeps the HBM result in a module global, and returns
a copy of it on every later call."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

_CACHE = {}


@nki.jit
def exp_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    if x.shape in _CACHE:
        nisa.dma_copy(dst=tile, src=_CACHE[x.shape])
    else:
        nisa.dma_copy(dst=tile, src=x)
        nisa.activation(dst=tile, op=nl.exp, data=tile)
        _CACHE[x.shape] = out
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x):
    return np.exp(x)


def cases():
    rng = np.random.default_rng(7)
    return [(rng.standard_normal((64, 128)).astype(np.float32),)]
