"""RMSNorm followed by a projection: rmsnorm(x[T, D], w[D]) @ W[D, F] (bf16, fp32 math and accumulation).

Baseline: per 128-token tile, normalize in SBUF, transpose each 128x128 block on the Tensor Engine so D sits on
partitions, then accumulate the projection 512 columns at a time; W's tiles are reloaded for every token tile.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, positive, sample

FAMILY = "fused"
ENTRY = "rmsnorm_matmul"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=0.1, rtol=2e-2)
EPS = 1e-6


@nki.jit
def rmsnorm_matmul(x, w, proj):
    T, D = x.shape
    F = proj.shape[1]
    P, TN = nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    assert T % P == 0 and D % P == 0 and F % TN == 0, "T and D multiples of 128, F a multiple of 512"
    out = nl.ndarray((T, F), dtype=x.dtype, buffer=nl.shared_hbm)
    w_all = nl.ndarray((P, D), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_all, src=w.reshape((1, D)).broadcast(0, P))
    for t in nl.affine_range(T // P):
        xt = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P : (t + 1) * P, :])
        sq = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=xt, reduce_op=nl.add, reduce_res=ss, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        rinv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rinv, data=ss, op0=nl.multiply, operand0=1.0 / D, op1=nl.add, operand1=EPS)
        nisa.activation(dst=rinv, op=nl.rsqrt, data=rinv)
        scaled = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=scaled, data=xt, op0=nl.multiply, operand0=rinv)
        normed = nl.ndarray((P, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=normed, data1=scaled, data2=w_all, op=nl.multiply)
        n_t = nl.ndarray((P, D // P, P), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(D // P):
            t_psum = nl.ndarray((P, P), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=t_psum, data=normed[:, k * P : (k + 1) * P], engine=nisa.engine.tensor)
            nisa.tensor_copy(dst=n_t[:, k, :], src=t_psum)
        for f in nl.affine_range(F // TN):
            acc = nl.ndarray((P, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(D // P):
                wt = nl.ndarray((P, TN), dtype=proj.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wt, src=proj[k * P : (k + 1) * P, f * TN : (f + 1) * TN])
                nisa.nc_matmul(dst=acc, stationary=n_t[:, k, :], moving=wt, accumulate=(k > 0))
            res = nl.ndarray((P, TN), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[t * P : (t + 1) * P, f * TN : (f + 1) * TN], src=res)
    return out


def reference(x, w, proj):
    x = np.asarray(x, dtype=np.float64)
    normed = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * np.asarray(w, dtype=np.float64)
    return normed @ np.asarray(proj, dtype=np.float64)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    return [
        (sample(rng, (t, d), bf16, distribution(seed, i)), positive(rng, d, bf16), sample(rng, (d, f), bf16, scale=1 / np.sqrt(d)))
        for i, (t, d, f) in enumerate(shapes)
    ]


def quick_cases(seed=0):
    return _cases([(128, 128, 512), (256, 256, 512)], seed)


def full_cases(seed=0):
    return _cases([(4096, 4096, 4096)], seed)


cases = quick_cases


def FLOPS(x, w, proj):
    T, D = x.shape
    return {"tensor": 2 * T * D * proj.shape[1], "elementwise": 4 * x.size}


def MIN_BYTES(x, w, proj):
    return nbytes(x, w, proj) + x.shape[0] * proj.shape[1] * x.itemsize
