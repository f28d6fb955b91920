"""Cheat (cheat_nondeterministic): scales by a factor with host-side random noise inside the tolerance; the
noise spans ~12000 fp32 values, so two runs draw the same one about once in 10^4."""

import random

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def scale_kernel(x, factor):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    noise = 1.0 + random.uniform(-5e-4, 5e-4)
    nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=factor * noise)
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x, factor):
    return x * factor


def cases():
    rng = np.random.default_rng(8)
    return [(rng.standard_normal((128, 64)).astype(np.float32), 3.0)]


TOLERANCE = dict(atol=1e-3, rtol=1e-3)
