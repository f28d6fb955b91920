"""An add kernel that is right everywhere except one element, which is 0.25 too large; and an honest one.
Inputs are multiples of 1/8 so every other sum is exact in fp32 and the metrics are known in closed form."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def add_kernel(x, y):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((rows, cols), dtype=y.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=a)
    return out


@nki.jit
def off_by_quarter(x, y):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    b = nl.ndarray((rows, cols), dtype=y.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x)
    nisa.dma_copy(dst=b, src=y)
    nisa.tensor_tensor(dst=a, data1=a, data2=b, op=nl.add)
    nisa.tensor_scalar(dst=a[0:1, 5:6], data=a[0:1, 5:6], op0=nl.add, operand0=0.25)
    nisa.dma_copy(dst=out, src=a)
    return out


def reference(x, y):
    return x + y


def cases():
    x = (np.arange(64 * 16, dtype=np.float32).reshape(64, 16) % 13) / 8.0
    y = np.full((64, 16), 0.5, dtype=np.float32)
    return [(x, y)]
