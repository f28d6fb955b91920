"""Five cases of different shapes for `validate --workers`: copy_kernel gets case 2 wrong (a FAIL among PASSes)
and prints on case 3; raises_kernel raises on cases 3 and 4, on different lines (tests/validate/test_parallel.py
asserts them)."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np

ROWS = [8, 16, 24, 32, 40]


@nki.jit
def copy_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if rows == 24:
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    if rows == 32:
        print("case 3 ran")
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def raises_kernel(x):
    rows, cols = x.shape
    if rows == 32:
        raise ValueError("case 3 is refused")  # marker: case 3
    if rows == 40:
        raise ValueError("case 4 is refused")  # marker: case 4
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


def reference(x):
    return x


def cases(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((rows, 64)).astype(np.float32),) for rows in ROWS]
