"""Matmul with the left operand given transposed: C[M, N] = lhsT[K, M].T @ rhs[K, N] (bf16 in, bf16 out).

The layout the Tensor Engine wants: K on the partitions of both operands. Baseline: per 128-row block of C,
the stationary K tiles are loaded once, but every rhs tile is reloaded for every row block (M/128 times).
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "matmul"
ENTRY = "matmul_lhsT"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=0.25, rtol=2e-2)
TUNABLE = {"TN": [128, 256, 512]}


@nki.jit
def matmul_lhsT(lhsT, rhs, TN=512):
    K, M = lhsT.shape
    _, N = rhs.shape
    P = nl.tile_size.pmax
    assert K % P == 0 and M % P == 0 and N % TN == 0, "K and M multiples of 128, N a multiple of TN"
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // P):
        stationary = nl.ndarray((P, K // P, P), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // P):
            nisa.dma_copy(dst=stationary[:, k, :], src=lhsT[k * P : (k + 1) * P, m * P : (m + 1) * P])
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // P):
                moving = nl.ndarray((P, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=moving, src=rhs[k * P : (k + 1) * P, n * TN : (n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=stationary[:, k, :], moving=moving, accumulate=(k > 0))
            res = nl.ndarray((P, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * P : (m + 1) * P, n * TN : (n + 1) * TN], src=res)
    return out


def reference(lhsT, rhs, TN=512):
    return np.asarray(lhsT, dtype=np.float64).T @ np.asarray(rhs, dtype=np.float64)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [
        (sample(rng, (k, m), bf16, distribution(seed, i)), sample(rng, (k, n), bf16, distribution(seed, i), scale=1 / np.sqrt(k)))
        for i, (k, m, n) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(128, 128, 512), (256, 256, 512), (128, 256, 1024)], seed)


def full_cases(seed=0):
    return _cases([(5120, 4096, 12288)], seed)


cases = quick_cases


def FLOPS(lhsT, rhs, TN=512):
    return {"tensor": 2 * lhsT.shape[0] * lhsT.shape[1] * rhs.shape[1]}


def MIN_BYTES(lhsT, rhs, TN=512):
    return nbytes(lhsT, rhs) + lhsT.shape[1] * rhs.shape[1] * lhsT.itemsize
