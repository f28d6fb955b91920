"""Transposing the stationary operand on the TensorE tile by tile vs a pre-transposed operand (the trn2
transposes investigation, see measurements.toml): C[M, N] = A[M, K] @ B[K, N], our own code.

  matmul_transpose_tiles  each 128x128 tile of A is loaded, transposed on the TensorE (PSUM), copied to SBUF,
                          inside the N loop (so every tile is transposed N/512 times)
  matmul_pretransposed    the same loop nest on A given transposed (lhsT [K, M]): no transposes
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

TM, TK, TN = 128, 128, 512


def _transposed_tiles(a, rhs, transpose):
    """a is [M, K] when `transpose` (each 128x128 tile is transposed on the TensorE), else lhsT [K, M]."""
    m_dim, k_dim = a.shape if transpose else (a.shape[1], a.shape[0])
    n_dim = rhs.shape[1]
    out = nl.ndarray((m_dim, n_dim), dtype=rhs.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(m_dim // TM):
        for ni in nl.affine_range(n_dim // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k_dim // TK):
                lhs = nl.ndarray((TK, TM), dtype=a.dtype, buffer=nl.sbuf)
                if transpose:
                    tile = nl.ndarray((TM, TK), dtype=a.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=tile, src=a[mi * TM : (mi + 1) * TM, ki * TK : (ki + 1) * TK])
                    flipped = nl.ndarray((TK, TM), dtype=a.dtype, buffer=nl.psum)
                    nisa.nc_transpose(dst=flipped, data=tile)
                    nisa.tensor_copy(dst=lhs, src=flipped)
                else:
                    nisa.dma_copy(dst=lhs, src=a[ki * TK : (ki + 1) * TK, mi * TM : (mi + 1) * TM])
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[ki * TK : (ki + 1) * TK, ni * TN : (ni + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=lhs, moving=b)
            res = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[mi * TM : (mi + 1) * TM, ni * TN : (ni + 1) * TN], src=res)
    return out


@nki.jit
def matmul_transpose_tiles(a, rhs):
    return _transposed_tiles(a, rhs, transpose=True)


@nki.jit
def matmul_pretransposed(lhsT, rhs):
    return _transposed_tiles(lhsT, rhs, transpose=False)


def cases():
    """0: small bf16 (A [256, 512] and B [512, 1024], with numerics); 1: bf16 2048^3 (zeros)."""
    rng = np.random.default_rng(0)
    bf16 = ml_dtypes.bfloat16
    return [
        (rng.standard_normal((256, 512)).astype(bf16), rng.standard_normal((512, 1024)).astype(bf16)),
        (np.zeros((2048, 2048), bf16), np.zeros((2048, 2048), bf16)),
    ]


def reference(a, rhs):
    return np.asarray(a, np.float32) @ np.asarray(rhs, np.float32)


TOLERANCE = dict(atol=0.5, rtol=2e-2)
