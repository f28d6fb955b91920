"""Cheat (fail_tolerance): a matmul that skips work, using only the first K tile of the contraction."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    a = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT[0:128, :])
    nisa.dma_copy(dst=b, src=rhs[0:128, :])
    nisa.nc_matmul(dst=acc, stationary=a, moving=b)
    res = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def reference(lhsT, rhs):
    return lhsT.T @ rhs


def cases():
    rng = np.random.default_rng(15)
    return [(rng.standard_normal((512, 128)).astype(ml_dtypes.bfloat16), rng.standard_normal((512, 256)).astype(ml_dtypes.bfloat16))]
