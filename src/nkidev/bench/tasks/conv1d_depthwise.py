"""Depthwise 1-d convolution (valid, cross-correlation) of x[C, L] with per-channel taps w[C, K] (fp32):
out[c, t] = sum_k w[c, k] * x[c, t + k],  t < L - K + 1.

Baseline: channels on partitions; one multiply-add over the whole sequence per tap (scalar_tensor_tensor).
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "conv"
ENTRY = "conv1d_depthwise"
DTYPES = ["float32"]
TOLERANCE = dict(atol=1e-5, rtol=1e-5)


@nki.jit
def conv1d_depthwise(x, w):
    C, L = x.shape
    K = w.shape[1]
    Lo = L - K + 1
    P = nl.tile_size.pmax
    out = nl.ndarray((C, Lo), dtype=x.dtype, buffer=nl.shared_hbm)
    for c in nl.affine_range((C + P - 1) // P):
        rows = min(P, C - c * P)
        xt = nl.ndarray((P, L), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[:rows], src=x[c * P : c * P + rows, :])
        wt = nl.ndarray((P, K), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=wt[:rows], src=w[c * P : c * P + rows, :])
        acc = nl.ndarray((P, Lo), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=acc[:rows], data=xt[:rows, 0:Lo], op0=nl.multiply, operand0=wt[:rows, 0:1])
        for k in nl.sequential_range(1, K):
            nisa.scalar_tensor_tensor(
                dst=acc[:rows], data=xt[:rows, k : k + Lo], op0=nl.multiply, operand0=wt[:rows, k : k + 1], op1=nl.add, operand1=acc[:rows]
            )
        res = nl.ndarray((P, Lo), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res[:rows], src=acc[:rows])
        nisa.dma_copy(dst=out[c * P : c * P + rows, :], src=res[:rows])
    return out


def reference(x, w):
    x, w = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
    K = w.shape[1]
    Lo = x.shape[1] - K + 1
    return sum(w[:, k : k + 1] * x[:, k : k + Lo] for k in range(K))


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    return [
        (sample(rng, (c, L), np.float32, distribution(seed, i)), sample(rng, (c, k), np.float32, scale=1 / np.sqrt(k)))
        for i, (c, L, k) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(128, 256, 4), (200, 512, 7)], seed)


def full_cases(seed=0):
    return _cases([(4096, 4096, 4)], seed)


cases = quick_cases


def FLOPS(x, w):
    K = w.shape[1]
    return {"elementwise": 2 * x.shape[0] * (x.shape[1] - K + 1) * K}


def MIN_BYTES(x, w):
    K = w.shape[1]
    return nbytes(x, w) + x.shape[0] * (x.shape[1] - K + 1) * x.itemsize
