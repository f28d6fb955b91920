"""Matmul C[M, N] = A[M, K] @ B[K, N] with A in its natural row-major layout (bf16 in, bf16 out).

The Tensor Engine contracts over the partition dim, so A's 128x128 blocks must be transposed first.
Baseline: per 128-row block of A, each K block is transposed on the Tensor Engine (through PSUM), then the
block row of C is accumulated as in matmul_lhsT; B's tiles are reloaded for every row block.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "matmul"
ENTRY = "matmul"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=0.25, rtol=2e-2)


@nki.jit
def matmul(a, b):
    M, K = a.shape
    _, N = b.shape
    P, TN = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    assert K % P == 0 and M % P == 0 and N % TN == 0, "K and M multiples of 128, N a multiple of 512"
    out = nl.ndarray((M, N), dtype=a.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // P):
        rows = nl.ndarray((P, K), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=a[m * P : (m + 1) * P, :])
        a_t = nl.ndarray((P, K // P, P), dtype=a.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // P):
            t_psum = nl.ndarray((P, P), dtype=a.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=t_psum, data=rows[:, k * P : (k + 1) * P], engine=nisa.engine.tensor)
            nisa.tensor_copy(dst=a_t[:, k, :], src=t_psum)
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // P):
                moving = nl.ndarray((P, TN), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=moving, src=b[k * P : (k + 1) * P, n * TN : (n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=a_t[:, k, :], moving=moving, accumulate=(k > 0))
            res = nl.ndarray((P, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * P : (m + 1) * P, n * TN : (n + 1) * TN], src=res)
    return out


def reference(a, b):
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [
        (sample(rng, (m, k), bf16, distribution(seed, i)), sample(rng, (k, n), bf16, distribution(seed, i), scale=1 / np.sqrt(k)))
        for i, (m, k, n) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(128, 128, 512), (256, 256, 512), (128, 384, 1024)], seed)


def full_cases(seed=0):
    return _cases([(4096, 5120, 12288)], seed)


cases = quick_cases


def FLOPS(a, b):
    return {"tensor": 2 * a.shape[0] * a.shape[1] * b.shape[1]}


def MIN_BYTES(a, b):
    return nbytes(a, b) + a.shape[0] * b.shape[1] * a.itemsize
