"""A task file for the bisect tests: out = 2 * x, computed as two independent row tiles (one per loop trip)."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def two_tiles(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(2):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=t)
    return out


def reference(x):
    return 2 * np.asarray(x, np.float64)


def cases():
    return [(np.arange(256 * 64, dtype=np.float32).reshape(256, 64) / 100,)]
