"""Honest: fp32 row sums with a 1-D output (the reference returns shape (rows,))."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def rowsum_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows,), dtype=nl.float32, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range((rows + P - 1) // P):
        start = t * P
        n = min(P, rows - start)
        tile = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[:n], src=x[start : start + n, :])
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=total[:n], op=nl.add, data=tile[:n], axis=1)
        nisa.dma_copy(dst=out[start : start + n], src=total[:n])
    return out


def reference(x):
    return x.sum(axis=1)


def cases():
    rng = np.random.default_rng(5)
    return [(rng.uniform(-1, 1, shape).astype(np.float32),) for shape in [(128, 64), (333, 200)]]
