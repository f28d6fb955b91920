"""Honest: SiLU of a bf16 [batch, seq, hidden] tensor on the Scalar Engine, with a bf16 result."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def silu_kernel(x):
    batch, seq, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for b in nl.affine_range(batch):
        for t in nl.affine_range((seq + P - 1) // P):
            start = t * P
            n = min(P, seq - start)
            tile = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile[:n], src=x[b, start : start + n, :])
            act = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
            nisa.activation(dst=act[:n], op=nl.silu, data=tile[:n])
            nisa.dma_copy(dst=out[b, start : start + n, :], src=act[:n])
    return out


def reference(x):
    return x / (1.0 + np.exp(-x))


def cases():
    rng = np.random.default_rng(3)
    return [(rng.standard_normal(shape).astype(ml_dtypes.bfloat16) * 3,) for shape in [(2, 128, 256), (1, 300, 64)]]
