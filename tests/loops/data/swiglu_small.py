"""Test copy of examples/swiglu_naive.py with one small shape (T=256, D=256, F=512): the weights are loaded twice."""

import ml_dtypes
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def swiglu_naive(xT, w_gate, w_up):
    D, T = xT.shape
    F = w_gate.shape[1]
    P = nl.tile_size.pmax  # 128: contraction rows and token rows per tile
    FT = nl.tile_size.gemm_moving_fmax  # 512: output columns per matmul (one PSUM bank of fp32)
    assert D % P == 0 and T % P == 0 and F % FT == 0, "D, T multiples of 128 and F a multiple of 512"
    out = nl.ndarray((T, F), dtype=xT.dtype, buffer=nl.shared_hbm)

    for t in nl.affine_range(T // P):
        for f in nl.affine_range(F // FT):
            gate = nl.ndarray((P, FT), dtype=nl.float32, buffer=nl.psum)
            up = nl.ndarray((P, FT), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(D // P):
                x_tile = nl.ndarray((P, P), dtype=xT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=x_tile, src=xT[k * P : (k + 1) * P, t * P : (t + 1) * P])
                wg_tile = nl.ndarray((P, FT), dtype=w_gate.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wg_tile, src=w_gate[k * P : (k + 1) * P, f * FT : (f + 1) * FT])
                wu_tile = nl.ndarray((P, FT), dtype=w_up.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wu_tile, src=w_up[k * P : (k + 1) * P, f * FT : (f + 1) * FT])
                nisa.nc_matmul(dst=gate, stationary=x_tile, moving=wg_tile)
                nisa.nc_matmul(dst=up, stationary=x_tile, moving=wu_tile)

            act = nl.ndarray((P, FT), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=act, op=nl.silu, data=gate)
            h = nl.ndarray((P, FT), dtype=xT.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=h, data1=act, data2=up, op=nl.multiply)
            nisa.dma_copy(dst=out[t * P : (t + 1) * P, f * FT : (f + 1) * FT], src=h)
    return out


def reference(xT, w_gate, w_up):
    x = np.asarray(xT, dtype=np.float64).T
    gate = x @ np.asarray(w_gate, dtype=np.float64)
    up = x @ np.asarray(w_up, dtype=np.float64)
    return gate / (1.0 + np.exp(-gate)) * up


# (T tokens, D model dim, F hidden dim): 8 token tiles, so the naive kernel loads each weight 8 times.
SHAPES = [(256, 256, 512)]


def cases(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for T, D, F in SHAPES:
        xT = rng.standard_normal((D, T)).astype(ml_dtypes.bfloat16)
        w_gate = (rng.standard_normal((D, F)) / np.sqrt(D)).astype(ml_dtypes.bfloat16)
        w_up = (rng.standard_normal((D, F)) / np.sqrt(D)).astype(ml_dtypes.bfloat16)
        out.append((xT, w_gate, w_up))
    return out


TOLERANCE = dict(atol=2e-2, rtol=2e-2)
