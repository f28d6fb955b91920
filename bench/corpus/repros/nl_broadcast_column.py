"""nl.subtract / nl.add with a [P, 1] operand against a [P, F] tile is refused.
Docs: current nki.language.add/subtract are "Similar to numpy.add/subtract" (numpy broadcasting); the
nki.language.add page of the earlier API spells it out: "x.shape and y.shape must be broadcastable to a
common shape ... b = nl.load(b_tensor[0:128, 0:1])  # broadcast on free dimension -- [128, 1] is broadcasted
to [128, 512]". The "no implicit broadcasting" rule belongs to nisa.tensor_tensor, not the nl wrappers.
Correct: out = a - col (evidence for the current API is the numpy analogy; confirm before relying on it)."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a, c):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    col = nl.ndarray(c.shape, dtype=c.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    nisa.dma_copy(dst=col, src=c)
    y = nl.subtract(x, col)
    z = nl.add(y, col)
    w = nl.subtract(z, col)
    nisa.dma_copy(dst=out, src=w)
    return out


a = np.random.rand(128, 64).astype(np.float32)
c = np.random.rand(128, 1).astype(np.float32)
expect("nl_broadcast_column", lambda: nki.simulate(kernel)(a, c), lambda r: None if np.allclose(r, a - c) else "wrong")
