"""RMSNorm of x[tokens, hidden] with weight w[hidden]: x / sqrt(mean(x^2) + eps) * w (bf16, fp32 math).

Baseline: tokens on partitions, 128 per tile; the weight row is broadcast to every partition once; per tile a
squared pass with an fp32 row sum, rsqrt, and two multiplies.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, positive, sample

FAMILY = "normalization"
ENTRY = "rmsnorm"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=2e-2, rtol=2e-2)
EPS = 1e-6


@nki.jit
def rmsnorm(x, w):
    T, H = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    w_all = nl.ndarray((P, H), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_all, src=w.reshape((1, H)).broadcast(0, P))
    for t in nl.affine_range((T + P - 1) // P):
        rows = min(P, T - t * P)
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[t * P : t * P + rows, :])
        sq = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=sq[:rows], op=nl.square, data=xt[:rows], reduce_op=nl.add, reduce_res=ss[:rows], reduce_cmd=nisa.reduce_cmd.reset_reduce
        )
        rinv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rinv[:rows], data=ss[:rows], op0=nl.multiply, operand0=1.0 / H, op1=nl.add, operand1=EPS)
        nisa.activation(dst=rinv[:rows], op=nl.rsqrt, data=rinv[:rows])
        normed = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed[:rows], data=xt[:rows], op0=nl.multiply, operand0=rinv[:rows])
        res = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res[:rows], data1=normed[:rows], data2=w_all[:rows], op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=res[:rows])
    return out


def reference(x, w):
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * np.asarray(w, dtype=np.float64)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [(sample(rng, (t, h), bf16, distribution(seed, i)), positive(rng, h, bf16)) for i, (t, h) in enumerate(shapes)]


def quick_cases(seed=0):
    return _cases([(128, 512), (300, 1024), (1, 64)], seed)


def full_cases(seed=0):
    return _cases([(4096, 8192)], seed)


cases = quick_cases


def FLOPS(x, w):
    return {"elementwise": 4 * x.size}


def MIN_BYTES(x, w):
    return 2 * nbytes(x) + nbytes(w)
