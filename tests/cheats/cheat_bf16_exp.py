"""Cheat (cheat_precision_downgrade): an fp32 softmax that keeps its exponentials in a bf16 tile."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def softmax_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    neg_max = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=tile, axis=1, negate=True)
    exps = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.activation(dst=exps, op=nl.exp, data=tile, bias=neg_max)
    total = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=total, op=nl.add, data=exps, axis=1)
    nisa.reciprocal(dst=total, data=total)
    res = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=res, data=exps, op0=nl.multiply, operand0=total)
    nisa.dma_copy(dst=out, src=res)
    return out


def reference(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def cases():
    rng = np.random.default_rng(10)
    return [(rng.standard_normal((128, 256)).astype(np.float32),)]


TOLERANCE = dict(atol=1e-3, rtol=1e-2)
