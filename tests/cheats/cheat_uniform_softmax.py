"""Cheat (cheat_input_independent): a "softmax" of small logits that returns the uniform distribution 1/N,
elementwise within the task's loose atol, whatever the input."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def softmax_kernel(x, scale):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range(rows // P):
        tile = nl.ndarray((P, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=tile, value=1.0 / cols)
        nisa.dma_copy(dst=out[t * P : (t + 1) * P, :], src=tile)
    return out


def reference(x, scale):
    z = x * scale
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def cases():
    rng = np.random.default_rng(4)
    return [(rng.standard_normal((128, 512)).astype(np.float32), 0.125)]


TOLERANCE = dict(atol=2e-3, rtol=2e-2, rel_l2=0.2)
