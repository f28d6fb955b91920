"""GELU (exact, with erf) of x[rows, cols]: 0.5 * x * (1 + erf(x / sqrt(2))) (bf16 in and out, fp32 math).

Baseline: 128 rows per tile, one activation per tile on the Scalar Engine, loaded and stored whole.
"""

import math

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "elementwise"
ENTRY = "gelu"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=1e-2, rtol=2e-2)


@nki.jit
def gelu(x):
    R, C = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((R + P - 1) // P):
        rows = min(P, R - t * P)
        xt = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        res = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=res[:rows], op=nl.gelu, data=xt[:rows])
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x):
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    return [(sample(rng, s, ml_dtypes.bfloat16, distribution(seed, i), scale=2.0),) for i, s in enumerate(shapes)]


def quick_cases(seed=0):
    return _cases([(128, 512), (300, 256), (5, 64)], seed)


def full_cases(seed=0):
    return _cases([(8192, 8192)], seed)


cases = quick_cases


def FLOPS(x):
    return {"elementwise": x.size}


def MIN_BYTES(x):
    return 2 * nbytes(x)
