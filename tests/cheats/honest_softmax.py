"""Honest: fp32 scaled softmax over rows: max, exp(scale*x - scale*max) on the Scalar Engine, sum, 1/sum."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def softmax_fp32(x, scale):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range((rows + P - 1) // P):
        start = t * P
        n = min(P, rows - start)
        tile = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[:n], src=x[start : start + n, :])
        neg_max = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[:n], op=nl.maximum, data=tile[:n], axis=1, negate=True)
        nisa.tensor_scalar(dst=neg_max[:n], data=neg_max[:n], op0=nl.multiply, operand0=scale)
        exps = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=exps[:n], op=nl.exp, data=tile[:n], bias=neg_max[:n], scale=scale)
        total = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=total[:n], op=nl.add, data=exps[:n], axis=1)
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv[:n], data=total[:n])
        result = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=result[:n], data=exps[:n], op0=nl.multiply, operand0=inv[:n])
        nisa.dma_copy(dst=out[start : start + n, :], src=result[:n])
    return out


def reference(x, scale):
    z = x * scale
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def cases(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(np.float32), 0.5) for shape in [(128, 256), (200, 512), (7, 96)]]
