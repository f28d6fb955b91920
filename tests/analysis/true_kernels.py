"""Small NKI kernels, each written to trigger one investigation or to look like it and not trigger it.

tests/analysis/test_true_findings.py profiles them with the cost model and checks the findings. Inputs are
small so every profile takes well under a second.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

P = 128
BF16 = ml_dtypes.bfloat16


def rows(t=512, h=512, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal((t, h)).astype(dtype)


# --- redundant_load -------------------------------------------------------------------------------------


@nki.jit
def reload_in_loop(x, w):
    """w[128, H] is loaded again for every token tile: a real reload (T/128 = 4 times)."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        wt = nl.ndarray((P, H), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=wt, src=w)
        nisa.tensor_tensor(dst=xt, data1=xt, data2=wt, op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out


@nki.jit
def broadcast_once(x, g):
    """g[H] is broadcast to all 128 partitions once, outside the loop (.broadcast): not a reload."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    gt = nl.ndarray((P, H), dtype=g.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=gt, src=g.reshape((1, H)).broadcast(0, P))
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        nisa.tensor_tensor(dst=xt, data1=xt, data2=gt, op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out


@nki.jit
def broadcast_once_ap(x, g):
    """The same stride-0 partition broadcast written as an access pattern: g.ap([[0, 128], [1, H]])."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    gt = nl.ndarray((P, H), dtype=g.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=gt, src=g.ap([[0, P], [1, H]]))
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        nisa.tensor_tensor(dst=xt, data1=xt, data2=gt, op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out


@nki.jit
def broadcast_in_loop(x, g):
    """g[H] broadcast again inside the token loop: each iteration reads g again, a real reload."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T // P):
        gt = nl.ndarray((P, H), dtype=g.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=gt, src=g.reshape((1, H)).broadcast(0, P))
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        nisa.tensor_tensor(dst=xt, data1=xt, data2=gt, op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out


@nki.jit
def cast_on_dma(x):
    """bf16 in HBM, cast to fp32 by the DMA on the way in (the DMA writes 2x the bytes it reads): read once."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        nisa.tensor_scalar(dst=xt, data=xt, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out


# --- dma_efficiency -------------------------------------------------------------------------------------


@nki.jit
def narrow_dmas(x):
    """Copies x in 128 x 64 bf16 slices: 128 B per partition per DMA, far below the 2 KiB minimum."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    W = 64
    for t in nl.affine_range(T // P):
        for c in nl.affine_range(H // W):
            xt = nl.ndarray((P, W), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, c * W : (c + 1) * W])
            nisa.dma_copy(dst=out[t * P : (t + 1) * P, c * W : (c + 1) * W], src=xt)
    return out


@nki.jit
def wide_dmas(x):
    """Copies x in full rows: 8 KiB per partition per DMA (fp32, H = 2048)."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out


# --- TensorE: te_underutilization, redundant_transpose, te_idle ---------------------------------------------


REPEATS = 8  # at most 8 accumulators in flight (8 PSUM banks): the TensorE never waits for a free bank


def _matmul(lhsT, rhs, k_tile):
    """out[M, N] = lhsT.T @ rhs with every operand loaded up front; contraction tiles of `k_tile` rows."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((k_tile, K // k_tile, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((k_tile, K // k_tile, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // k_tile):
        nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * k_tile : (k + 1) * k_tile, :])
        nisa.dma_copy(dst=b[:, k, :], src=rhs[k * k_tile : (k + 1) * k_tile, :])
    for r in nl.affine_range(REPEATS):  # repeat the product so TensorE time dominates the loads
        acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // k_tile):
            nisa.nc_matmul(dst=acc, stationary=a[:, k, :], moving=b[:, k, :], accumulate=(k > 0))
        res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        if r == REPEATS - 1:
            nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def matmul_k64(lhsT, rhs):
    """Contraction tiles of 64 rows: half the Tensor Engine's 128 rows do nothing."""
    return _matmul(lhsT, rhs, 64)


@nki.jit
def matmul_k128(lhsT, rhs):
    """Contraction tiles of 128 rows: the full array; operands resident, matmuls back to back."""
    return _matmul(lhsT, rhs, 128)


@nki.jit
def matmul_transposing(a, rhs):
    """a[M, K] arrives untransposed: every iteration transposes it on the Tensor Engine before the matmul."""
    M, K = a.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((M, K), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=at, src=a)
    b = nl.ndarray((K, N), dtype=rhs.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=rhs)
    for r in nl.affine_range(16):
        tp = nl.ndarray((K, M), dtype=a.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=tp, data=at)
        lhs = nl.ndarray((K, M), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=lhs, src=tp)
        acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=lhs, moving=b)
        res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        if r == 15:
            nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def matmul_waiting_on_loads(lhsT, rhs):
    """Loads each moving tile right before its matmul into one buffer: the Tensor Engine waits on every load."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((K, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    b = nl.ndarray((K, 512), dtype=rhs.dtype, buffer=nl.sbuf)  # one buffer: the next load waits for the matmul
    for n in nl.affine_range(N // 512):
        nisa.dma_copy(dst=b, src=rhs[:, n * 512 : (n + 1) * 512])
        acc = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
        res = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out[:, n * 512 : (n + 1) * 512], src=res)
    return out


# --- engine_bound -------------------------------------------------------------------------------------


@nki.jit
def vector_heavy(x):
    """Eight Vector Engine passes per tile for one load and one store: Vector-bound."""
    T, H = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        for _ in range(8):
            nisa.tensor_tensor(dst=xt, data1=xt, data2=xt, op=nl.maximum)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=xt)
    return out
