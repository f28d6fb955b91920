"""Tiled matmul C[M, N] = A[M, K] @ B[K, N] with A passed transposed (lhsT[K, M]), the layout the
Tensor Engine wants: K on the partition dim of both operands.

Tiles: K by 128 (partitions), M by 128 (stationary free size), N by 512 (one fp32 PSUM bank).
Each (m, n) output tile accumulates its K tiles in PSUM, is copied to SBUF and stored once.
A task file: `nkidev validate examples/matmul.py::matmul_kernel`.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, f"contraction dims differ: lhsT has {K}, rhs has {K2}"
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    assert K % TK == 0 and M % TM == 0 and N % TN == 0, "K, M must be multiples of 128 and N of 512"

    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        # the stationary operand for this row block: all K tiles, loaded once
        lhs_tiles = nl.ndarray((TK, K // TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            nisa.dma_copy(dst=lhs_tiles[:, k, :], src=lhsT[k * TK : (k + 1) * TK, m * TM : (m + 1) * TM])
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                rhs_tile = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * TK : (k + 1) * TK, n * TN : (n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=lhs_tiles[:, k, :], moving=rhs_tile, accumulate=(k > 0))
            result = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[m * TM : (m + 1) * TM, n * TN : (n + 1) * TN], src=result)
    return out


def reference(lhsT, rhs):
    return np.asarray(lhsT, dtype=np.float64).T @ np.asarray(rhs, dtype=np.float64)


def cases(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(128, 128, 512), (256, 384, 1024), (512, 128, 512)]
    return [
        (rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16), rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16))
        for k, m, n in shapes
    ]


TOLERANCE = dict(atol=0.2, rtol=2e-2)
