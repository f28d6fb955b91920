"""Replay candidate 2 (wrong math): GELU where SwiGLU needs SiLU."""

import nki
import nki.isa as nisa
import nki.language as nl


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
            nisa.activation(dst=act, op=nl.gelu, data=gate)
            h = nl.ndarray((P, FT), dtype=xT.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=h, data1=act, data2=up, op=nl.multiply)
            nisa.dma_copy(dst=out[t * P : (t + 1) * P, f * FT : (f + 1) * FT], src=h)
    return out
