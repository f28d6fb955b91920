"""Cheat (cheat_data_dependent_program): reads a device value into a register and branches on it in Python,
issuing different instructions for different data (a tile whose first element is positive takes another
path). Such a host-side `if` cannot be compiled for Trainium; the emulator runs it, the trace shows it."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

NKI_VERSION = "0.6"  # branching on a register in Python (`if positive:`) is an error under NKI 0.7's tracer


@nki.jit
def relu_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    flag = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=flag, data=tile[0:1, 0:1], op0=nl.greater, operand0=0.0)
    positive = nisa.register_alloc()
    nisa.register_load(positive, flag)
    if positive:
        nisa.activation(dst=tile, op=nl.relu, data=tile)
    else:
        nisa.tensor_scalar(dst=tile, data=tile, op0=nl.maximum, operand0=0.0)
    nisa.dma_copy(dst=out, src=tile)
    return out


def reference(x):
    return np.maximum(x, 0)


def cases():
    x = np.random.default_rng(14).standard_normal((128, 64)).astype(np.float32)
    x[0, 0] = 1.0
    return [(x,)]
