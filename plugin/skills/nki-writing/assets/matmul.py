"""C[M, N] = A[M, K] @ B[K, N], with A passed transposed as lhsT[K, M] so K sits on the partitions.

Tiles K and M by 128 and N by 512 (one fp32 PSUM bank). The stationary tiles of a row block are loaded
once and reused for every N block; each output tile accumulates over K in PSUM, then goes PSUM -> SBUF -> HBM.
    nkidev validate matmul.py::matmul_kernel
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax  # 128, 128, 512
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        lhs = nl.ndarray((TK, K // TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TK):
            nisa.dma_copy(dst=lhs[:, k, :], src=lhsT[k * TK : (k + 1) * TK, m * TM : (m + 1) * TM])
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                rhs_tile = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * TK : (k + 1) * TK, n * TN : (n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=lhs[:, k, :], moving=rhs_tile, accumulate=(k > 0))
            res = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * TM : (m + 1) * TM, n * TN : (n + 1) * TN], src=res)
    return out


def reference(lhsT, rhs):
    return np.asarray(lhsT, dtype=np.float64).T @ np.asarray(rhs, dtype=np.float64)


def cases(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(128, 128, 512), (256, 256, 1024)]  # (K, M, N); multiples of 128, 128, 512
    bf16 = ml_dtypes.bfloat16
    return [(rng.standard_normal((k, m)).astype(bf16), rng.standard_normal((k, n)).astype(bf16)) for k, m, n in shapes]


TOLERANCE = dict(atol=0.1, rtol=2e-2)  # bf16 inputs and output
