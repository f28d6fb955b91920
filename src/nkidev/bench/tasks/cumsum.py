"""Inclusive prefix sum along the last dim of x[rows, L] (fp32): out[r, t] = sum_{s <= t} x[r, s].

Baseline: rows on partitions, 128 per tile; one cumulative add over each row on the Vector Engine.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "scan"
ENTRY = "cumsum"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-4, rtol=1e-4)


@nki.jit
def cumsum(x):
    R, L = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((R, L), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((R + P - 1) // P):
        rows = min(P, R - t * P)
        xt = nl.ndarray((P, L), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        res = nl.ndarray((P, L), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar_cumulative(dst=res[:rows], src=xt[:rows], op0=nl.add, op1=nl.add, imm0=0.0)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x):
    return np.cumsum(np.asarray(x, dtype=np.float64), axis=-1)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    return [(sample(rng, s, np.float32, distribution(seed, i)),) for i, s in enumerate(shapes)]


def quick_cases(seed=0):
    return _cases([(128, 512), (130, 1000), (3, 64)], seed)


def full_cases(seed=0):
    return _cases([(4096, 8192)], seed)


cases = quick_cases


def FLOPS(x):
    return {"elementwise": x.size}


def MIN_BYTES(x):
    return 2 * nbytes(x)
