"""A one-case task file for the hardware-path tests: out = 2 * x."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=out, src=t)
    return out


def reference(x):
    return 2 * np.asarray(x, np.float64)


def cases():
    return [(np.arange(128 * 512, dtype=np.float32).reshape(128, 512) / 1000,)]


TOLERANCE = dict(atol=1e-5, rtol=1e-5)
