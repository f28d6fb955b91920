"""Half-computed tiles (fail_output_not_written, a likely bug): computes only the first 64 rows of each SBUF tile but stores all 128,
so half of every tile goes out as whatever the uninitialized SBUF held."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def silu_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range(rows // P):
        tile = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * P : (t + 1) * P, :])
        act = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=act[:64], op=nl.silu, data=tile[:64])
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=act)
    return out


def reference(x):
    return x / (1.0 + np.exp(-x))


def cases():
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16),)]
