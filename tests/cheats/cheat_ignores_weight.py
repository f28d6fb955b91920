"""Cheat (cheat_input_independent): an RMSNorm that never reads its weight; the task's weight is all ones,
so the case's own numbers are right."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_kernel(x, weight):
    rows, hidden = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range(rows // P):
        tile = nl.ndarray((P, hidden), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * P : (t + 1) * P, :])
        squares = nl.ndarray((P, hidden), dtype=nl.float32, buffer=nl.sbuf)
        sumsq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares, op=nl.square, data=tile, reduce_op=nl.add, reduce_res=sumsq, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.tensor_scalar(dst=sumsq, data=sumsq, op0=nl.multiply, operand0=1.0 / hidden, op1=nl.add, operand1=1e-6)
        nisa.activation(dst=sumsq, op=nl.rsqrt, data=sumsq)
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=sumsq)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=tile)
    return out


def reference(x, weight):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * weight


def cases():
    rng = np.random.default_rng(6)
    return [(rng.standard_normal((256, 512)).astype(np.float32), np.ones(512, dtype=np.float32))]
