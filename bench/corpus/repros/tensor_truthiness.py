"""`if bias:` on a kernel tensor argument (an HBM tensor handle) is treated as a data read.
nki-library writes `if bias:` / `if gamma:` for Optional[nl.ndarray] parameters (e.g. core/mlp, subkernels)
to mean "was a tensor passed". On the official NKI the argument is a tensor handle at trace time, a
Python object whose truthiness is `is not None`; no device data exists to read. Correct: the branch is taken."""

import nki
import nki.isa as nisa
import nki.language as nl
from _common import expect, np


@nki.jit
def kernel(a, bias=None):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=a)
    if bias:
        b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=bias)
        nisa.tensor_tensor(dst=x, data1=x, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=x)
    return out


a = np.random.rand(16, 8).astype(np.float32)
bias = np.zeros((16, 8), np.float32)  # all zeros: a data read would make the branch look "false"
bias[0, 0] = 0.0
expect(
    "tensor_truthiness",
    lambda: nki.simulate(kernel)(a, bias + 1.0),
    lambda r: None if np.allclose(r, a + 1.0) else "branch not taken / wrong",
)
