"""2-d transpose out[N, M] = x[M, N].T (bf16, bit-exact).

Baseline: 128x128 blocks, each loaded on its own, transposed on the Tensor Engine into PSUM, copied to SBUF and
stored.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "data_movement"
ENTRY = "transpose"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=0.0, rtol=0.0)


@nki.jit
def transpose(x):
    M, N = x.shape
    P = nl.tile_size.pmax
    assert M % P == 0 and N % P == 0, "M and N multiples of 128"
    out = nl.ndarray((N, M), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // P):
        for j in nl.affine_range(N // P):
            block = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=block, src=x[i * P : (i + 1) * P, j * P : (j + 1) * P])
            t_ps = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=t_ps, data=block, engine=nisa.engine.tensor)
            res = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=t_ps)
            nisa.dma_copy(dst=out[j * P : (j + 1) * P, i * P : (i + 1) * P], src=res)
    return out


def reference(x):
    return np.asarray(x, dtype=np.float64).T


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    return [(sample(rng, s, ml_dtypes.bfloat16, distribution(seed, i)),) for i, s in enumerate(shapes)]


def quick_cases(seed=0):
    return _cases([(128, 256), (384, 128)], seed)


def full_cases(seed=0):
    return _cases([(8192, 8192)], seed)


cases = quick_cases


def FLOPS(x):
    return {}


def MIN_BYTES(x):
    return 2 * nbytes(x)
