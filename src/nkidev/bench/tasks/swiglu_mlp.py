"""SwiGLU MLP block: out[T, D] = (silu(x @ Wg) * (x @ Wu)) @ Wd, with x given transposed (xT[D, T]; bf16).

Baseline: per 128-token tile, the hidden activations are computed transposed (hT[F, 128], F on partitions)
so they feed the down projection directly; all three weights are reloaded for every token tile.
"""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

from nkidev.bench.inputs import distribution, nbytes, sample

FAMILY = "mlp"
ENTRY = "swiglu_mlp"
DTYPES = ["bfloat16"]
TOLERANCE = dict(atol=0.05, rtol=3e-2)


@nki.jit
def swiglu_mlp(xT, w_gate, w_up, w_down):
    D, T = xT.shape
    F = w_gate.shape[1]
    P = nl.tile_size.pmax
    TD = min(D, nl.tile_size.gemm_moving_fmax)
    assert D % P == 0 and T % P == 0 and F % P == 0 and D % TD == 0, "D, T and F multiples of 128"
    out = nl.ndarray((T, D), dtype=xT.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T // P):
        xs = nl.ndarray((P, D // P, P), dtype=xT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(D // P):
            nisa.dma_copy(dst=xs[:, k, :], src=xT[k * P : (k + 1) * P, t * P : (t + 1) * P])
        hT = nl.ndarray((P, F // P, P), dtype=xT.dtype, buffer=nl.sbuf)
        for f in nl.affine_range(F // P):
            g_ps = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.psum)
            u_ps = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(D // P):
                wg = nl.ndarray((P, P), dtype=w_gate.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wg, src=w_gate[k * P : (k + 1) * P, f * P : (f + 1) * P])
                wu = nl.ndarray((P, P), dtype=w_up.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wu, src=w_up[k * P : (k + 1) * P, f * P : (f + 1) * P])
                nisa.nc_matmul(dst=g_ps, stationary=wg, moving=xs[:, k, :], accumulate=(k > 0))
                nisa.nc_matmul(dst=u_ps, stationary=wu, moving=xs[:, k, :], accumulate=(k > 0))
            act = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=act, op=nl.silu, data=g_ps)
            nisa.tensor_tensor(dst=hT[:, f, :], data1=act, data2=u_ps, op=nl.multiply)
        for d in nl.affine_range(D // TD):
            o_ps = nl.ndarray((P, TD), dtype=nl.float32, buffer=nl.psum)
            for f in nl.affine_range(F // P):
                wd = nl.ndarray((P, TD), dtype=w_down.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wd, src=w_down[f * P : (f + 1) * P, d * TD : (d + 1) * TD])
                nisa.nc_matmul(dst=o_ps, stationary=hT[:, f, :], moving=wd, accumulate=(f > 0))
            res = nl.ndarray((P, TD), dtype=xT.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=o_ps)
            nisa.dma_copy(dst=out[t * P : (t + 1) * P, d * TD : (d + 1) * TD], src=res)
    return out


def reference(xT, w_gate, w_up, w_down):
    x = np.asarray(xT, dtype=np.float64).T
    g = x @ np.asarray(w_gate, dtype=np.float64)
    u = x @ np.asarray(w_up, dtype=np.float64)
    return (g / (1.0 + np.exp(-g)) * u) @ np.asarray(w_down, dtype=np.float64)


def _cases(shapes, seed):
    rng = np.random.default_rng(seed)
    bf16 = ml_dtypes.bfloat16
    out = []
    for i, (t, d, f) in enumerate(shapes):
        xT = sample(rng, (d, t), bf16, distribution(seed, i))
        wg = sample(rng, (d, f), bf16, scale=1 / np.sqrt(d))
        wu = sample(rng, (d, f), bf16, scale=1 / np.sqrt(d))
        wd = sample(rng, (f, d), bf16, scale=1 / np.sqrt(f))
        out.append((xT, wg, wu, wd))
    return out


def quick_cases(seed=0):
    return _cases([(128, 128, 256), (256, 256, 384)], seed)


def full_cases(seed=0):
    return _cases([(2048, 2048, 8192)], seed)


cases = quick_cases


def FLOPS(xT, w_gate, w_up, w_down):
    D, T = xT.shape
    F = w_gate.shape[1]
    return {"tensor": 6 * T * D * F, "elementwise": 2 * T * F}


def MIN_BYTES(xT, w_gate, w_up, w_down):
    return nbytes(xT, w_gate, w_up, w_down) + xT.nbytes
