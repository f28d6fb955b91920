"""A view that is out of range (or empty) is rejected when it is created, though never accessed.
nki-library builds views ahead of use and only accesses the in-range ones (e.g. TensorView slices for
the last partial tile); see empty_slice.py for the size-0 case. Per the NKI docs, static out-of-bounds
checks apply to the access pattern of an instruction's operand, so creating an unused view is legal."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    remainder = a.shape[0] % 8  # == 0 here
    # the next tile's rows, past the end of `a`; only used when there is a remainder
    beyond = a.ap(pattern=[[a.shape[1], 8], [1, a.shape[1]]], offset=a.shape[0] * a.shape[1])
    if remainder:
        nisa.dma_copy(dst=x[0:8, :], src=beyond)
    nisa.dma_copy(dst=out, src=x)
    return out


a = np.random.rand(16, 8).astype(np.float32)
expect("view_bounds_at_creation", lambda: nki.simulate(kernel)(a), lambda r: None if np.array_equal(r, a) else "wrong")
