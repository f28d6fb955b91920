"""Honest: tiled matmul C = lhsT.T @ rhs in fp32 and in bf16 (fp32 PSUM accumulation over K tiles)."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


def _matmul(lhsT, rhs, out):
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * TK : (k + 1) * TK, m * TM : (m + 1) * TM])
                nisa.dma_copy(dst=b, src=rhs[k * TK : (k + 1) * TK, n * TN : (n + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b, accumulate=(k > 0))
            res = nl.ndarray((TM, TN), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * TM : (m + 1) * TM, n * TN : (n + 1) * TN], src=res)


@nki.jit
def matmul_fp32(lhsT, rhs):
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _matmul(lhsT, rhs, out)
    return out


@nki.jit
def matmul_bf16(lhsT, rhs):
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    _matmul(lhsT, rhs, out)
    return out


def reference(lhsT, rhs):
    return lhsT.T @ rhs


SHAPES = [(128, 128, 512), (256, 256, 1024)]


def cases(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((k, m)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)) for k, m, n in SHAPES]


def cases_bf16(seed=0):
    return [tuple(a.astype(ml_dtypes.bfloat16) for a in case) for case in cases(seed)]
