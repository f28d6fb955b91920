"""Cheat (cheat_numpy_on_kernel_data): applies np.exp to an SBUF tile instead of an activation instruction."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def exp_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    result = np.exp(tile)
    nisa.dma_copy(dst=out, src=result)
    return out


def reference(x):
    return np.exp(x)


def cases():
    return [(np.linspace(-2, 2, 128 * 32, dtype=np.float32).reshape(128, 32),)]
