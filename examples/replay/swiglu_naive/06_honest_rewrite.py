"""Replay candidate 6 (the honest rewrite): examples/swiglu.py's kernel under the naive kernel's name:
weights and x loaded once and resident in SBUF, >= 4 KiB per partition per DMA."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def swiglu_naive(xT, w_gate, w_up):
    D, T = xT.shape
    F = w_gate.shape[1]
    P = nl.tile_size.pmax  # 128 partitions
    FT = nl.tile_size.gemm_moving_fmax  # 512 output columns per matmul (one PSUM bank of fp32)
    R = 2  # consecutive rows per partition in one load block
    B = P * R  # rows per load block
    assert D % B == 0 and T % P == 0 and F % FT == 0, "D a multiple of 256, T of 128, F of 512"
    out = nl.ndarray((T, F), dtype=xT.dtype, buffer=nl.shared_hbm)

    # Load each block of 256 contraction rows once: partition p holds rows b*256 + 2p and 2p + 1.
    x_blocks, wg_blocks, wu_blocks = [], [], []
    for b in nl.affine_range(D // B):
        rows = slice(b * B, (b + 1) * B)
        x_sb = nl.ndarray((P, R * T), dtype=xT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_sb, src=xT[rows, :].reshape((P, R * T)))
        wg_sb = nl.ndarray((P, R * F), dtype=w_gate.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=wg_sb, src=w_gate[rows, :].reshape((P, R * F)))
        wu_sb = nl.ndarray((P, R * F), dtype=w_up.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=wu_sb, src=w_up[rows, :].reshape((P, R * F)))
        x_blocks.append(x_sb)
        wg_blocks.append(wg_sb)
        wu_blocks.append(wu_sb)

    for t in nl.affine_range(T // P):
        h = nl.ndarray((P, F), dtype=xT.dtype, buffer=nl.sbuf)
        for f in nl.affine_range(F // FT):
            gate = nl.ndarray((P, FT), dtype=nl.float32, buffer=nl.psum)
            up = nl.ndarray((P, FT), dtype=nl.float32, buffer=nl.psum)
            for b in nl.affine_range(D // B):
                for r in nl.affine_range(R):
                    x_tile = x_blocks[b][:, r * T + t * P : r * T + (t + 1) * P]
                    cols = slice(r * F + f * FT, r * F + (f + 1) * FT)
                    nisa.nc_matmul(dst=gate, stationary=x_tile, moving=wg_blocks[b][:, cols])
                    nisa.nc_matmul(dst=up, stationary=x_tile, moving=wu_blocks[b][:, cols])
            act = nl.ndarray((P, FT), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=act, op=nl.silu, data=gate)
            nisa.tensor_tensor(dst=h[:, f * FT : (f + 1) * FT], data1=act, data2=up, op=nl.multiply)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=h)
    return out
