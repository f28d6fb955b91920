"""Row softmax of x[rows, cols] (bf16 in and out, fp32 math).

Baseline: per 128-row tile, one pass each for the row max (Vector Engine), exp(x - max) with an fp32 row sum
(Scalar Engine accumulators) and the multiply by 1/sum. Partial last tiles are handled by slicing rows.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "normalization"
ENTRY = "softmax"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=1e-2, rtol=2e-2)


@nki.jit
def softmax(x):
    R, C = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((R + P - 1) // P):
        rows = min(P, R - t * P)
        xt = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[:rows], op=nl.maximum, data=xt[:rows], axis=1, negate=True)
        exps = nl.ndarray((P, C), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=exps[:rows],
            op=nl.exp,
            data=xt[:rows],
            bias=neg_max[:rows],
            reduce_op=nl.add,
            reduce_res=sums[:rows],
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[:rows], data=sums[:rows])
        res = nl.ndarray((P, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=res[:rows], data=exps[:rows], op0=nl.multiply, operand0=inv[:rows])
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x):
    z = np.asarray(x, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    return [(sample(rng, s, ml_dtypes.bfloat16, distribution(seed, i), scale=2.0),) for i, s in enumerate(shapes)]


def quick_cases(seed=0):
    return _cases([(128, 512), (200, 1024), (7, 64)], seed)


def full_cases(seed=0):
    return _cases([(4096, 8192)], seed)


cases = quick_cases


def FLOPS(x):
    return {"elementwise": 4 * x.size}


def MIN_BYTES(x):
    return 2 * nbytes(x)
