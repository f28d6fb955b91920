"""LayerNorm of x[tokens, hidden] with gamma, beta[hidden]: (x - mean) / sqrt(var + eps) * gamma + beta (fp32).

Baseline: tokens on partitions; mean and variance from the Vector Engine's bn_stats (per 512-element chunk)
and bn_aggr; gamma and beta broadcast to every partition once.
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, positive, sample

FAMILY = "normalization"
ENTRY = "layernorm"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-4, rtol=1e-4)
EPS = 1e-5


@nki.jit
def layernorm(x, gamma, beta):
    T, H = x.shape
    P = nl.tile_size.pmax
    CH = nl.tile_size.bn_stats_fmax
    chunks = (H + CH - 1) // CH
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((P, H), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma.reshape((1, H)).broadcast(0, P))
    bb = nl.ndarray((P, H), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bb, src=beta.reshape((1, H)).broadcast(0, P))
    for t in nl.affine_range((T + P - 1) // P):
        rows = min(P, T - t * P)
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        stats = nl.ndarray((P, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            width = min(CH, H - c * CH)
            nisa.bn_stats(dst=stats[:rows, 6 * c : 6 * c + 6], data=xt[:rows, c * CH : c * CH + width])
        mv = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv[:rows], data=stats[:rows])
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[:rows], data=mv[:rows, 1:2], op0=nl.add, operand0=EPS)
        nisa.activation(dst=rstd[:rows], op=nl.rsqrt, data=rstd[:rows])
        y = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[:rows], data=xt[:rows], op0=nl.subtract, operand0=mv[:rows, 0:1], op1=nl.multiply, operand1=rstd[:rows])
        nisa.tensor_tensor(dst=y[:rows], data1=y[:rows], data2=g[:rows], op=nl.multiply)
        res = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res[:rows], data1=y[:rows], data2=bb[:rows], op=nl.add)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x, gamma, beta):
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + EPS) * gamma + beta


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    return [
        (sample(rng, (t, h), f32, distribution(seed, i), scale=3.0, shift=1.0), positive(rng, h, f32), sample(rng, h, f32))
        for i, (t, h) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(128, 512), (200, 1000), (7, 64)], seed)


def full_cases(seed=0):
    return _cases([(4096, 8192)], seed)


cases = quick_cases


def FLOPS(x, gamma, beta):
    return {"elementwise": 6 * x.size}


def MIN_BYTES(x, gamma, beta):
    return 2 * nbytes(x) + nbytes(gamma, beta)
