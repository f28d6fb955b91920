"""Honest: fp32 elementwise add, tiled 128 rows at a time, including a partial last tile."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def add_kernel(x, y):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range((rows + P - 1) // P):
        start = t * P
        n = min(P, rows - start)
        a = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray((P, cols), dtype=y.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a[:n], src=x[start : start + n, :])
        nisa.dma_copy(dst=b[:n], src=y[start : start + n, :])
        s = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=s[:n], data1=a[:n], data2=b[:n], op=nl.add)
        nisa.dma_copy(dst=out[start : start + n, :], src=s[:n])
    return out


def reference(x, y):
    return x + y


def cases():
    rng = np.random.default_rng(0)
    return [tuple(rng.standard_normal(shape).astype(np.float32) for _ in range(2)) for shape in [(128, 512), (300, 1000), (1, 17)]]
