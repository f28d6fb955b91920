"""Batched matmul C[b] = A[b] @ B[b] for b in range(B), with A given transposed (a_t[B, K, M]; bf16).

Baseline: one matmul_lhsT per batch, each reloading its rhs tiles for every 128-row block.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "matmul"
ENTRY = "bmm"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=0.25, rtol=2e-2)


@nki.jit
def bmm(a_t, b):
    B, K, M = a_t.shape
    N = b.shape[2]
    P, TN = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    assert K % P == 0 and M % P == 0 and N % TN == 0, "K and M multiples of 128, N a multiple of 512"
    out = nl.ndarray((B, M, N), dtype=a_t.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(B):
        for m in nl.affine_range(M // P):
            stationary = nl.ndarray((P, K // P, P), dtype=a_t.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // P):
                nisa.dma_copy(dst=stationary[:, k, :], src=a_t[i, k * P : (k + 1) * P, m * P : (m + 1) * P])
            for n in nl.affine_range(N // TN):
                acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(K // P):
                    moving = nl.ndarray((P, TN), dtype=b.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=moving, src=b[i, k * P : (k + 1) * P, n * TN : (n + 1) * TN])
                    nisa.nc_matmul(dst=acc, stationary=stationary[:, k, :], moving=moving, accumulate=(k > 0))
                res = nl.ndarray((P, TN), dtype=out.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=res, src=acc)
                nisa.dma_copy(dst=out[i, m * P : (m + 1) * P, n * TN : (n + 1) * TN], src=res)
    return out


def reference(a_t, b):
    return np.swapaxes(np.asarray(a_t, dtype=np.float64), 1, 2) @ np.asarray(b, dtype=np.float64)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [
        (
            sample(rng, (bs, k, m), bf16, distribution(seed, i)),
            sample(rng, (bs, k, n), bf16, distribution(seed, i), scale=1 / np.sqrt(k)),
        )
        for i, (bs, m, k, n) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(2, 128, 128, 512), (3, 128, 256, 512)], seed)


def full_cases(seed=0):
    return _cases([(16, 512, 1024, 1024), (8, 4096, 128, 4096)], seed)


cases = quick_cases


def FLOPS(a_t, b):
    B, K, M = a_t.shape
    return {"tensor": 2 * B * K * M * b.shape[2]}


def MIN_BYTES(a_t, b):
    return nbytes(a_t, b) + a_t.shape[0] * a_t.shape[2] * b.shape[2] * a_t.itemsize
