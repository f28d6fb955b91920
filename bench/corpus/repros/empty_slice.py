"""An empty basic slice t[0:0] (size-0 dimension) raises, even when never accessed.
Python/NumPy slicing semantics, which NKI tensor indexing follows, give an empty view; kernels compute
slice bounds such as t[:, n_full * T : F] where the remainder can be 0."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    rest = x[:, 8:8]  # empty: no remainder
    if rest.shape[1] > 0:
        nisa.memset(dst=rest, value=0.0)
    nisa.dma_copy(dst=out, src=x)
    return out


a = np.random.rand(16, 8).astype(np.float32)
expect("empty_slice", lambda: nki.simulate(kernel)(a), lambda r: None if np.array_equal(r, a) else "wrong")
