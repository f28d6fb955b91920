"""A task file for the bisect tests: a few dependent steps, a loop, an independent branch and a PSUM tile.

out = exp(x * 1.5**3) + y + zeros @ y (the matmul's result goes through PSUM and a tensor_copy)."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def chain(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    for _ in range(3):
        nisa.tensor_scalar(dst=a, data=a, op0=nl.multiply, operand0=1.5)
    e = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=a)
    c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=e, data2=b, op=nl.add)
    ident = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=ident, value=0.0)
    p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=ident, moving=b)
    s = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=p)
    nisa.tensor_tensor(dst=c, data1=c, data2=s, op=nl.add)
    nisa.dma_copy(dst=out, src=c)
    return out


def reference(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return np.exp(x * 1.5**3) + y


def cases():
    rng = np.random.default_rng(0)
    return [(rng.random((128, 128), dtype=np.float32) * 0.1, rng.random((128, 128), dtype=np.float32))]


TOLERANCE = dict(atol=1e-4, rtol=1e-4)
