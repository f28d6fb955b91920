"""An SPMD kernel: each program copies its own 128-row block. Launched alone, program 0 leaves the rest unwritten."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

GRID = {"grid_copy": 4}


@nki.jit
def grid_copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
    nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=t)
    return out


@nki.jit
def grid_copy_2d(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0) * nl.num_programs(1) + nl.program_id(1)
    t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
    nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=t)
    return out


def reference(x):
    return x


def cases():
    return [(np.random.default_rng(0).standard_normal((512, 64)).astype(np.float32),)]
