"""Cheat (cheat_input_modified): accumulates the sum into its input x in HBM, then copies x to the output."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def add_inplace(x, y):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((rows, cols), dtype=y.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=x, src=a)  # writes the input
    nisa.dma_copy(dst=out, src=x)
    return out


def reference(x, y):
    return x + y


def cases():
    rng = np.random.default_rng(2)
    return [(rng.standard_normal((128, 256)).astype(np.float32), rng.standard_normal((128, 256)).astype(np.float32))]
