"""Cheat (cheat_nondeterministic): keeps a call counter in a module global and alternates between two
answers, both within tolerance; a harness that compares only two runs with different settings could
mistake that for something else."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

_CALLS = [0]


@nki.jit
def scale_kernel(x, factor):
    _CALLS[0] += 1
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.tensor_scalar(dst=tile, data=tile, op0=nl.multiply, operand0=factor * (1.0 + 1e-5 * (_CALLS[0] % 2)))
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x, factor):
    return x * factor


def cases():
    rng = np.random.default_rng(16)
    return [(rng.standard_normal((128, 64)).astype(np.float32), 3.0)]
