"""Cheat (cheat_precision_downgrade): an fp32 matmul task whose kernel casts both operands to bf16 on the way
into SBUF (4x faster on the Tensor Engine); the task's loose tolerance hides the error."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        a = nl.ndarray((128, M), dtype=nl.bfloat16, buffer=nl.sbuf)
        b = nl.ndarray((128, N), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128 : (k + 1) * 128, :])
        nisa.dma_copy(dst=b, src=rhs[k * 128 : (k + 1) * 128, :])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b, accumulate=(k > 0))
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def reference(lhsT, rhs):
    return lhsT.T @ rhs


def cases():
    rng = np.random.default_rng(9)
    return [(rng.standard_normal((256, 128)).astype(np.float32), rng.standard_normal((256, 512)).astype(np.float32))]


TOLERANCE = dict(atol=0.5, rtol=5e-2)
